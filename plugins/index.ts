import type { GatewayPlugin } from '../src/plugin.js';
import { chatPlugin } from './chat/index.js';
import { musicPlugin } from './music/index.js';

/** The built-in modality plugins, by the name `plugins:` in gateway.yaml uses. */
export const builtinPlugins: Readonly<Record<string, GatewayPlugin>> = {
  chat: chatPlugin,
  music: musicPlugin,
};
