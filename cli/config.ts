import { loadGatewayConfig, type GatewayConfig } from '../src/config/gateway-config.js';
import { compileSchemas } from '../src/config/schemas.js';

/*
 * gateway.yaml, read and checked against its JSON Schema. Loaded when a command runs
 * (`await import('./config.js')`, or through `withStore`), never while the program is built.
 */

export function loadConfig(file: string): GatewayConfig {
  return loadGatewayConfig(file, compileSchemas());
}
