import { BedrockRuntimeClient } from '@aws-sdk/client-bedrock-runtime';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import { afterAll, beforeAll } from 'vitest';
import { SIM_AWS } from './aws-sigv4.js';
import { startSimulator, type Simulator } from './server.js';

/** For the simulator's own Bedrock tests: the official AWS client pointed straight at it. */

/** A simulator for the test file; read `sim` inside tests and hooks. */
export function useSimulator(): { sim: Simulator } {
  const env = {} as { sim: Simulator };
  beforeAll(async () => {
    env.sim = await startSimulator({ port: 0 });
  });
  afterAll(async () => env.sim.close());
  return env;
}

/** @aws-sdk/client-bedrock-runtime at the simulator's /bedrock, signing with the simulator's access key id and `secretAccessKey`. */
export function bedrockClient(sim: Simulator, secretAccessKey: string = SIM_AWS.secretAccessKey): BedrockRuntimeClient {
  return new BedrockRuntimeClient({
    region: SIM_AWS.region, endpoint: `${sim.url}/bedrock`, maxAttempts: 1,
    credentials: { accessKeyId: SIM_AWS.accessKeyId, secretAccessKey },
    requestHandler: new NodeHttpHandler(),
  });
}
