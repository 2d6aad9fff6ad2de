import type { GatewayPlugin } from '../src/plugin.js';
import { audioPlugin } from './audio/index.js';
import { chatPlugin } from './chat/index.js';
import { embeddingsPlugin } from './embeddings/index.js';
import { modelsPlugin } from './models/index.js';
import { musicPlugin } from './music/index.js';

/** The built-in modality plugins, by the name `plugins:` in gateway.yaml uses. */
export const builtinPlugins: Readonly<Record<string, GatewayPlugin>> = {
  chat: chatPlugin,
  embeddings: embeddingsPlugin,
  audio: audioPlugin,
  models: modelsPlugin,
  music: musicPlugin,
};
