import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadGatewayConfig } from './gateway-config.js';
import { compileSchemas } from './schemas.js';
import { ConfigError } from './yaml-file.js';

const schemas = compileSchemas();

function write(text: string): string {
  const file = join(mkdtempSync(join(tmpdir(), 'tollgate-cfg-')), 'gateway.yaml');
  writeFileSync(file, text);
  return file;
}

function problems(text: string, env: NodeJS.ProcessEnv = {}): string[] {
  const file = write(text);
  try {
    loadGatewayConfig(file, schemas, env);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as ConfigError).message.split('\n').map((l) => l.replace(file, 'F'));
  }
  throw new Error('config was accepted');
}

describe('gateway.yaml loading', () => {
  it('applies defaults to an empty file', () => {
    const cfg = loadGatewayConfig(write(''), schemas, {});
    expect(cfg.server).toEqual({ host: '127.0.0.1', port: 8787, bodyLimitBytes: 1048576, shutdownTimeoutMs: 30000, streamStallTimeoutMs: 60000, trustProxy: false });
    expect(cfg.database.url).toMatch(/^sqlite:\/.*\/data\/tollgate\.db$/);
    expect(cfg.redis).toBeUndefined();
    expect(cfg.storage.s3).toBeUndefined();
    expect(cfg.metrics).toBeUndefined();
    expect(cfg.telemetry.otlp).toBeUndefined();
  });

  it('reads the metrics listener and the OTLP exporter, with their defaults', () => {
    const cfg = loadGatewayConfig(write('metrics: {}\ntelemetry:\n  otlp: { endpoint: "http://collector:4318/" }\n'), schemas, {});
    expect(cfg.metrics).toEqual({ host: '127.0.0.1', port: 9464 });
    expect(cfg.telemetry.otlp).toEqual({ endpoint: 'http://collector:4318', headers: {}, includePrompts: false, serviceName: 'tollgate', sampleRatio: 1 });
    const full = loadGatewayConfig(write('metrics: { host: 0.0.0.0, port: 9100 }\ntelemetry:\n  otlp: { endpoint: "https://c.example", headers: { authorization: "Bearer t" }, include_prompts: true, service_name: gw, sample_ratio: 0.1 }\n'), schemas, {});
    expect(full.metrics).toEqual({ host: '0.0.0.0', port: 9100 });
    expect(full.telemetry.otlp).toEqual({ endpoint: 'https://c.example', headers: { authorization: 'Bearer t' }, includePrompts: true, serviceName: 'gw', sampleRatio: 0.1 });
  });

  it('reads redis with the limits key prefix (default tollgate:) and call timeout (default 500 ms)', () => {
    expect(loadGatewayConfig(write('redis: { url: "redis://r:6379" }\n'), schemas, {}).redis).toEqual({ url: 'redis://r:6379', keyPrefix: 'tollgate:', timeoutMs: 500 });
    expect(loadGatewayConfig(write('redis: { url: "redis://r:6379", key_prefix: "gw-eu:", timeout_ms: 2000 }\n'), schemas, {}).redis).toEqual({ url: 'redis://r:6379', keyPrefix: 'gw-eu:', timeoutMs: 2000 });
    expect(problems('redis: { url: "redis://r", timeout_ms: 0 }\n')[0]).toMatch(/\/redis\/timeout_ms: must be >= 10/);
    expect(problems('redis: { url: "redis://r", key_prefix: "" }\n')[0]).toMatch(/\/redis\/key_prefix: must NOT have fewer than 1 characters/);
  });

  it.each([
    ['an OTLP endpoint that is not a URL', 'telemetry:\n  otlp: { endpoint: "collector:4318" }\n', /\/telemetry\/otlp\/endpoint: must match pattern/],
    ['an OTLP block without endpoint', 'telemetry:\n  otlp: {}\n', /\/telemetry\/otlp: must have the field "endpoint"/],
    ['a metrics port out of range', 'metrics: { port: 70000 }\n', /\/metrics\/port: must be <= 65535/],
    ['a sample ratio above 1', 'telemetry:\n  otlp: { endpoint: "http://c:4318", sample_ratio: 2 }\n', /\/telemetry\/otlp\/sample_ratio: must be <= 1/],
  ])('refuses %s', (_name, text, expected) => {
    expect(problems(text)[0]).toMatch(expected);
  });

  it.each([
    ['a wrong type', 'server:\n  port: "abc"\n', ['F:2: /server/port: must be integer']],
    ['an unknown key', 'server:\n  host: x\n  colour: blue\n', ['F:3: /server/colour: is not a known setting']],
    ['a mistyped key, with the one it could be', 'sever:\n  port: 1\n', ['F:1: /sever: is not a known setting; did you mean /server?']],
    ['a mistyped nested key', 'server:\n  prot: 1\n', ['F:2: /server/prot: is not a known setting; did you mean /server/port?']],
    ['one bad indent, in one line', 'server:\n  port: 1\n   host: x\n', ['F:3: YAML syntax: bad indentation: this line is indented more than the key above it, which has a value on its own line; line it up with that key']],
    ['a key indented less than its siblings', 'server:\n  port: 1\n host: x\n', ['F:3: YAML syntax: bad indentation: this key does not line up with the keys beside it']],
    ['a bad database url', 'database:\n  url: mysql://x\n', ['F:2: /database/url: must match pattern "^(sqlite:.+|postgres(ql)?://.+)$"']],
    ['a missing required field', 'storage:\n  s3:\n    region: eu\n', ['F:3: /storage/s3: must have the field "bucket"']],
    ['an enum', 'log:\n  level: loud\n', ['F:2: /log/level: must be one of "fatal", "error", "warn", "info", "debug", "trace", "silent"']],
    ['YAML syntax', 'server: [\n', ['F:2: YAML syntax: Flow sequence in block collection must be sufficiently indented and end with a ]']],
  ])('refuses %s with file, line, path and what was expected', (_name, text, expected) => {
    const got = problems(text);
    expect(got).toEqual(expected);
  });

  it('reports every problem, not just the first', () => {
    expect(problems('server:\n  port: -1\n  host: 5\n')).toHaveLength(2);
  });

  it('takes secrets from the environment and refuses an unset variable at its line', () => {
    const text = 'providers:\n  openai:\n    api_key: "${env:OPENAI_KEY_FOR_TEST}"\n';
    expect(loadGatewayConfig(write(text), schemas, { OPENAI_KEY_FOR_TEST: 'sk-x' }).providers.openai?.api_key).toBe('sk-x');
    expect(problems(text)).toEqual(['F:3: /providers/openai/api_key: environment variable OPENAI_KEY_FOR_TEST is not set']);
    expect(loadGatewayConfig(write('providers:\n  openai: { api_key: "${env:NOPE:-fallback}" }\n'), schemas, {}).providers.openai?.api_key).toBe('fallback');
  });

  it('resolves relative paths against the config file', () => {
    const file = write('database: { url: "sqlite:./db/x.db" }\nproviders_dir: ./p\n');
    const cfg = loadGatewayConfig(file, schemas, {});
    expect(cfg.database.url).toBe(`sqlite:${join(file, '..', 'db', 'x.db')}`);
    expect(cfg.providersDir).toBe(join(file, '..', 'p'));
  });

  it('extends another file: its settings apply, this file\'s replace them, maps merged, paths resolved where they are written', () => {
    const root = mkdtempSync(join(tmpdir(), 'tollgate-cfg-'));
    mkdirSync(join(root, 'examples'));
    writeFileSync(join(root, 'gateway.yaml'), [
      'server: { port: 9000, body_limit_bytes: 2048 }', 'database: { url: "sqlite:./data/base.db" }', 'providers_dir: ./providers',
      'simulator: { enabled: true, port: 8790 }', 'plugins: [chat, music]',
      'providers:', '  openai: { base_url: "http://127.0.0.1:8790/openai/v1", api_key: sim-key }', '  anthropic: { base_url: "http://127.0.0.1:8790/anthropic/v1" }',
    ].join('\n'));
    const example = join(root, 'examples', 'extra.yaml');
    writeFileSync(example, [
      'extends: ../gateway.yaml', 'server: { port: 9001 }', 'plugins: [chat]', 'providers:', '  anthropic: { api_key: "${env:ANTHROPIC_KEY_FOR_TEST:-k}" }',
      'storage: { s3: { bucket: tracks } }',
    ].join('\n'));
    const cfg = loadGatewayConfig(example, schemas, {});
    expect(cfg.server).toMatchObject({ port: 9001, bodyLimitBytes: 2048 });
    expect(cfg.database.url).toBe(`sqlite:${join(root, 'data', 'base.db')}`);
    expect(cfg.providersDir).toBe(join(root, 'providers'));
    expect(cfg.plugins).toEqual(['chat']);
    expect(cfg.simulator).toEqual({ port: 8790 });
    expect(cfg.providers).toEqual({
      openai: { base_url: 'http://127.0.0.1:8790/openai/v1', api_key: 'sim-key' },
      anthropic: { base_url: 'http://127.0.0.1:8790/anthropic/v1', api_key: 'k' },
    });
    expect(cfg.storage.s3?.bucket).toBe('tracks');
    expect(cfg.file).toBe(example);
  });

  it('refuses an extends cycle and a missing base, at the file that names it', () => {
    const root = mkdtempSync(join(tmpdir(), 'tollgate-cfg-'));
    writeFileSync(join(root, 'a.yaml'), 'extends: ./b.yaml\n');
    writeFileSync(join(root, 'b.yaml'), 'log: { level: warn }\nextends: ./a.yaml\n');
    expect(() => loadGatewayConfig(join(root, 'a.yaml'), schemas, {})).toThrow(`${join(root, 'b.yaml')}:2: /extends: ./a.yaml extends this file again (a cycle)`);
    writeFileSync(join(root, 'c.yaml'), 'extends: ./nope.yaml\n');
    expect(() => loadGatewayConfig(join(root, 'c.yaml'), schemas, {})).toThrow(`${join(root, 'nope.yaml')}: file not found`);
    writeFileSync(join(root, 'd.yaml'), 'extends: ./e.yaml\n');
    writeFileSync(join(root, 'e.yaml'), 'server: { port: "x" }\n');
    expect(() => loadGatewayConfig(join(root, 'd.yaml'), schemas, {})).toThrow(`${join(root, 'e.yaml')}:1: /server/port: must be integer`);
  });
});
