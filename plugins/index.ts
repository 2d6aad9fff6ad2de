import type { GatewayConfig, GatewayPlugin } from '../src/sdk.js';
import { audioPlugin } from './audio/index.js';
import { chatPlugin } from './chat/index.js';
import { embeddingsPlugin } from './embeddings/index.js';
import { imagesPlugin } from './images/index.js';
import { modelsPlugin } from './models/index.js';
import { moderationsPlugin } from './moderations/index.js';
import { musicPlugin } from './music/index.js';

/** The built-in modality plugins, by the name `plugins:` in gateway.yaml uses. */
const builtinPlugins: Readonly<Record<string, GatewayPlugin>> = {
  chat: chatPlugin,
  embeddings: embeddingsPlugin,
  audio: audioPlugin,
  models: modelsPlugin,
  music: musicPlugin,
  images: imagesPlugin,
  moderations: moderationsPlugin,
};

/** Picks the built-in plugins named in config (all of them when unset) plus any extra ones. */
export function selectPlugins(config: GatewayConfig, extra: readonly GatewayPlugin[] = []): GatewayPlugin[] {
  const names = config.plugins ?? Object.keys(builtinPlugins);
  const unknown = names.filter((n) => !(n in builtinPlugins));
  if (unknown.length > 0) throw new Error(`${config.file}: plugins: unknown plugin ${unknown.join(', ')} (known: ${Object.keys(builtinPlugins).join(', ')})`);
  return [...names.map((n) => builtinPlugins[n] as GatewayPlugin), ...extra];
}
