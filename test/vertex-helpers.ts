import { generateKeyPairSync } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Simulator } from '../simulator/server.js';
import { type OrgTestGateway, useOrgGateway } from './fixtures.js';

/** A service account made for a test: its key file (token_uri at the simulator) and what the simulator knows of it. */
export interface TestServiceAccount {
  email: string;
  projectId: string;
  /** The JSON key file, as Google's console downloads it. */
  file: string;
  json: string;
  /** The PEM private key (to sign assertions by hand in tests). */
  privateKeyPem: string;
}

let seq = 0;

/**
 * Generates an RSA key pair, registers the public half with the simulator (as creating a
 * key in IAM does) and writes the JSON key whose token_uri is the simulator's token endpoint.
 * `register: false` leaves the simulator unaware of it (a key Google never issued).
 */
export function serviceAccount(sim: Simulator, dir: string, opts: { projectId?: string; register?: boolean } = {}): TestServiceAccount {
  const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const projectId = opts.projectId ?? 'tollgate-test';
  const email = `gateway-${process.pid}-${++seq}@${projectId}.iam.gserviceaccount.com`;
  const privateKeyPem = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
  if (opts.register !== false) sim.google.addServiceAccount({ email, projectId, publicKeyPem: publicKey.export({ type: 'spki', format: 'pem' }).toString() });
  const json = JSON.stringify({
    type: 'service_account', project_id: projectId, private_key_id: `key${seq}`, private_key: privateKeyPem,
    client_email: email, client_id: '1234567890', token_uri: `${sim.url}/oauth2/token`,
  }, null, 2);
  const file = join(dir, `sa-${seq}.json`);
  writeFileSync(file, json);
  return { email, projectId, file, json, privateKeyPem };
}

/** gateway.yaml's `providers.vertex` for the simulator with this account's key file. */
function vertexProvider(sim: Simulator, sa: TestServiceAccount, google: Record<string, string> = {}): Record<string, unknown> {
  return { base_url: `${sim.url}/vertex/v1`, google: { credentials_file: sa.file, location: 'us-central1', ...google } };
}

/**
 * A gateway for an org holding $5 whose `providers.vertex` uses a fresh service account's key
 * file in `dir` (`google` overrides its settings); ledgers checked on close. `account()` is that
 * account, once the file has started.
 */
export function useVertexGateway(orgName: string, dir: string, google: Record<string, string> = {}): { t: OrgTestGateway; account: () => TestServiceAccount } {
  let sa: TestServiceAccount | undefined;
  const t = useOrgGateway(orgName, '5', (sim) => {
    sa = serviceAccount(sim, dir);
    return { yaml: { providers: { vertex: vertexProvider(sim, sa, google) } } };
  }, { ledger: true });
  const account = (): TestServiceAccount => {
    if (!sa) throw new Error('the Vertex test gateway has not started yet');
    return sa;
  };
  return { t, account };
}
