import { cpSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Simulator } from '../simulator/server.js';
import { cli, type CliResult, ROOT, STACK_FRAME, useCliConfig } from './cli-helpers.js';

/**
 * Issue 35: what the real `gateway` binary says when something is wrong, to the exact
 * text — one short located line, a did-you-mean, no misleading second error, words
 * instead of errno codes — and that `serve` refuses a bad provider file before it starts
 * anything.
 */

const env = useCliConfig('tollgate-cli-errors-');
let sim: Simulator;
let dir: string;
let config: string;
beforeAll(() => void ({ sim, dir, config } = env));

function refusedConfig(r: CliResult, lines: string): void {
  expect(r.code).toBe(2);
  expect(r.stdout).toBe('');
  expect(r.stderr).toBe(`configuration refused:\n${lines}\n`);
}

function write(name: string, text: string): string {
  const file = join(dir, name);
  writeFileSync(file, text);
  return file;
}

/** A copy of providers/ with openai.yaml changed by `edit`; returns the directory and the file. */
function providersWith(name: string, edit: (text: string) => string): { providers: string; file: string } {
  const providers = join(dir, name);
  cpSync(join(ROOT, 'providers'), providers, { recursive: true });
  const file = join(providers, 'openai.yaml');
  const original = readFileSync(file, 'utf8');
  const changed = edit(original);
  expect(changed).not.toBe(original);
  writeFileSync(file, changed);
  return { providers, file };
}

const lineOf = (file: string, needle: string): number => readFileSync(file, 'utf8').split('\n').findIndex((l) => l.includes(needle)) + 1;

describe('configuration errors', () => {
  it('a mistyped setting names the one it could be, on the line of its name', async () => {
    const file = write('sever.yaml', 'sever:\n  port: 1\n');
    refusedConfig(await cli(['validate', '--config', file]), `${file}:1: /sever: is not a known setting; did you mean /server?`);
  });

  it('a missing config file says so plainly, with its path and where the default is looked for', async () => {
    const file = join(dir, 'nope.yaml');
    refusedConfig(await cli(['validate', '--config', file]),
      `${file}: file not found\n(give the file with --config FILE; without it, gateway.yaml in the current directory, ${ROOT})`);
  });

  it('one bad indent is one short line at the line that is off, not the YAML library\'s lines', async () => {
    const file = write('indent.yaml', 'server:\n  host: 127.0.0.1\n  port: 8787\n   shutdown_timeout_ms: 1000\nlog: { level: silent }\n');
    refusedConfig(await cli(['validate', '--config', file]),
      `${file}:4: YAML syntax: bad indentation: this line is indented more than the key above it, which has a value on its own line; line it up with that key`);
    const { providers, file: openai } = providersWith('indent-providers', (t) => t.replace('\nname: OpenAI', '\n name: OpenAI'));
    const gw = write('indent-gw.yaml', `providers_dir: ${providers}\nlog: { level: silent }\n`);
    refusedConfig(await cli(['validate', '--config', gw]),
      `${openai}:3: YAML syntax: bad indentation: this line is indented more than the key above it, which has a value on its own line; line it up with that key`);
    const less = write('less.yaml', 'server:\n  host: 127.0.0.1\n port: 8787\n');
    refusedConfig(await cli(['validate', '--config', less]), `${less}:3: YAML syntax: bad indentation: this key does not line up with the keys beside it`);
  });

  it('a provider file\'s typo is its only error: gateway.yaml\'s settings for that provider are not also "declared by no file"', async () => {
    const { providers, file } = providersWith('typo-providers', (t) => t.replace('\nmodels:\n', '\nmodles:\n'));
    const gw = write('typo-gw.yaml', `providers_dir: ${providers}\nlog: { level: silent }\nproviders:\n  openai: { base_url: "${sim.url}/openai/v1", api_key: k }\n`);
    refusedConfig(await cli(['validate', '--config', gw]),
      `${file}:2: must have the field "models"\n${file}:${lineOf(file, 'modles:')}: /modles: is not a known setting; did you mean /models?`);
  });

  it('serve refuses a bad provider file before it starts the simulator', async () => {
    // A free port for the simulator, which must still be free after the refusal.
    const port = await new Promise<number>((resolve) => {
      const probe = createServer().listen(0, '127.0.0.1', () => {
        const p = (probe.address() as { port: number }).port;
        probe.close(() => resolve(p));
      });
    });
    const { providers, file } = providersWith('serve-providers', (t) => t.replace('prompt: "0.00000015"', 'prompt: "15 cents"'));
    const gw = write('serve-gw.yaml', `providers_dir: ${providers}\ndatabase: { url: "sqlite:${join(dir, 'serve.db')}" }\nlog: { level: silent }\nsimulator: { enabled: true, port: ${port} }\n`);
    const r = await cli(['serve', '--port', '0', '--config', gw]);
    expect(r.stderr).toMatch(new RegExp(`^configuration refused:\\n${file.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}:\\d+: /models/\\d+/pricing/prompt: must be a decimal USD string`));
    expect(r.code).toBe(2);
    expect(r.stdout).toBe(''); // no "provider simulator listening on …"
    await new Promise<void>((resolve, reject) => {
      const again = createServer().once('error', reject).listen(port, '127.0.0.1', () => again.close(() => resolve()));
    });
  });
});

describe('amounts and names', () => {
  const usage = (r: CliResult, first: string): void => {
    expect(r.code).toBe(1);
    expect(r.stderr.split('\n')[0]).toBe(first);
    expect(r.stderr).not.toMatch(STACK_FRAME);
  };

  it('a negative credit is refused as negative, not as "not a USD amount"', async () => {
    usage(await cli(['orgs', 'create', 'x', '--credits', '-3', '--config', config]), "error: option '--credits <usd>' argument '-3' is invalid. must not be negative");
    expect((await cli(['orgs', 'create', 'acme', '--credits', '5', '--config', config])).code).toBe(0);
    usage(await cli(['credits', 'add', '-3', '--org', 'acme', '--config', config]), "error: command-argument value '-3' is invalid for argument 'usd'. must not be negative");
    usage(await cli(['credits', 'add', '1.0000001', '--org', 'acme', '--config', config]),
      "error: command-argument value '1.0000001' is invalid for argument 'usd'. must be a USD amount with at most 6 decimals, e.g. 25 or 10.50");
  });

  it('a project name that is not a slug is refused with the slug it could be', async () => {
    const r = await cli(['projects', 'create', 'My Project!', '--org', 'acme', '--config', config]);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe('gateway: "My Project!" cannot be a project name. A project name is a slug: lowercase letters, digits, "-" and "_", starting with a letter or digit, at most 64 characters, e.g. "my-project"\n');
  });
});
