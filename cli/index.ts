import { Command, InvalidArgumentError, Option } from 'commander';
import { addCredits, bootstrapDemo, createOrg, requireOrg, deleteProviderKey, revokeKey, setProviderKey } from '../src/tenancy/admin.js';
import { addReloadCommand } from './reload.js';
import { displayUsd, microsToUsd, parseUsdToMicros } from '../src/lib/money.js';
import { packageVersion } from '../src/lib/paths.js';
import type { Retention } from '../src/store/types.js';
import { configOption, usdAmount, withStore } from './common.js';
import { addAuditCommand, changing, recordCommand } from './audit.js';
import { addKeyCommands, addLogsCommand, addProjectCommands, addUserCommands } from './management.js';
import { addCacheStatsCommand } from './cache.js';
import { addKeyRotateCommand } from './lifecycle.js';
import { addKeysList, addOrgsList } from './lists.js';

/*
 * The `gateway` program. Building it (for `--help` too) loads only commander and the command
 * files; an action imports what it runs when it runs (`await import(…)`): the gateway and the
 * plugins for `serve`, the simulator for `simulate`, the store through `withStore`
 * (CONTRIBUTING.md, "A CLI command").
 */

function port(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 65535) throw new InvalidArgumentError('must be a port number (0-65535)');
  return n;
}

async function serve(opts: { config: string; port?: number; simulatorPort?: number; metricsPort?: number }): Promise<void> {
  const [{ loadAll }, { portInUse, startConfiguredSimulator }, { createGateway }, { selectPlugins }] = await Promise.all([
    import('./catalog.js'), import('./simulator.js'), import('../src/gateway.js'), import('../plugins/index.js'),
  ]);
  // Every provider file is checked before anything starts: a refused file never leaves a simulator behind it.
  const { config, url: simUrl } = await startConfiguredSimulator(loadAll(opts.config).config, opts.simulatorPort);
  if (simUrl) console.log(`provider simulator listening on ${simUrl}`);
  const gateway = await createGateway({ config, plugins: selectPlugins(config) });
  if (config.bootstrap) {
    const demo = await bootstrapDemo(gateway.store, config.bootstrap.org, config.bootstrap.credits);
    if (demo) {
      console.log(`First start: created organization "${demo.org.name}" with ${displayUsd(demo.org.balanceMicros)} of credits.`);
      if (demo.login) {
        console.log(`Console login (an operator; shown once): ${demo.login.email} / ${demo.login.password}`);
        console.log('  sign in to the web console (its address is printed below); add users with `gateway users create`');
      }
      console.log('Its API key is shown once, here (create more with `gateway keys create --org NAME`):');
      console.log(demo.key);
    }
  }
  const port = opts.port ?? config.server.port;
  const url = await gateway.listen(port, opts.metricsPort).catch(async (err: unknown) => {
    await gateway.close();
    throw portInUse(err, 'The gateway', `${config.server.host}:${port}`, 'server.port', '--port', config.file);
  });
  gateway.startTasks();
  // Signals are handled before the address is printed: a supervisor (or a test) may stop the
  // process as soon as it reads that line.
  let stopping = false;
  const stop = (signal: string): void => {
    if (stopping) return;
    stopping = true;
    console.log(`${signal}: finishing in-flight requests and flushing the request log…`);
    // The gateway cuts what still runs at shutdown_timeout_ms and bills it; this is the last resort
    // should even that not finish (a store that never answers).
    const force = setTimeout(() => {
      console.error(`still busy ${FORCE_EXIT_GRACE_MS} ms after shutdown_timeout_ms (${config.server.shutdownTimeoutMs} ms); exiting`);
      process.exit(1);
    }, config.server.shutdownTimeoutMs + FORCE_EXIT_GRACE_MS);
    force.unref();
    gateway.close().then(() => {
      console.log('stopped');
      process.exit(0);
    }, (err: unknown) => {
      console.error(`shutdown failed: ${(err as Error).message}`);
      process.exit(1);
    });
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  // Re-reads gateway.yaml and providers/ (docs/routing.md, "Hot reload"); the outcome is in the server log.
  process.on('SIGHUP', () => void gateway.reload());
  // One write: whoever waits for "listening on" (a supervisor, a test) has the addresses below it too.
  console.log([
    `Tollgate ${packageVersion()} listening on ${url} (database ${config.database.url.split(':')[0]}, ${gateway.catalog.providers.size} providers)`,
    `Web console: ${url}/console`,
    ...(gateway.metricsUrl ? [`Prometheus metrics on ${gateway.metricsUrl}`] : []),
    ...(config.telemetry.otlp ? [`OpenTelemetry traces to ${config.telemetry.otlp.endpoint}/v1/traces`] : []),
  ].join('\n'));
}

/** How long after the drain deadline the process is stopped anyway. */
const FORCE_EXIT_GRACE_MS = 15_000;

export function buildProgram(): Command {
  const program = new Command('gateway')
    .description('Tollgate: one base URL and one key in front of many AI model providers, metered in USD.')
    .version(packageVersion())
    .showHelpAfterError();

  program.command('serve').description('Start the gateway (and the simulator, when gateway.yaml enables it).')
    .addOption(configOption()).option('-p, --port <n>', 'listen on this port instead of server.port (0 = any free port)', port)
    .option('--simulator-port <n>', 'run the built-in simulator on this port instead of simulator.port (0 = any free port); providers pointed at the simulator follow it', port)
    .option('--metrics-port <n>', 'serve /metrics on this port instead of metrics.port (when gateway.yaml enables metrics)', port)
    .action(serve);
  addReloadCommand(program);
  program.command('validate').description('Check gateway.yaml and every provider file; exit non-zero with file, line and path of each fault. Lists which providers the built-in simulator answers and which go to real hosts, and warns of a real host with no api_key.')
    .addOption(configOption())
    .action(async (opts: { config: string }) => {
      const [{ loadAll }, { describeUpstreams }] = await Promise.all([import('./catalog.js'), import('./simulator.js')]);
      const { config, catalog } = loadAll(opts.config);
      console.log(`${opts.config}: valid (${catalog.providers.size} providers, ${catalog.allRoutes().length} model routes)`);
      const upstreams = describeUpstreams(config, catalog);
      for (const line of upstreams.lines) console.log(`  ${line}`);
      for (const warning of upstreams.warnings) console.error(warning);
    });
  program.command('simulate').description('Run the provider simulator alone (fake OpenAI, Anthropic, Gemini, ElevenLabs, Deepgram upstreams).')
    .option('-p, --port <n>', 'port to listen on', port, 8790).option('--host <host>', 'address to bind', '127.0.0.1')
    .option('--latency-ms <n>', 'delay added to every response', (v) => Number(v), 0)
    .action(async (opts: { port: number; host: string; latencyMs: number }) => {
      const { startSimulator } = await import('../simulator/server.js');
      const sim = await startSimulator({ port: opts.port, host: opts.host, latencyMs: opts.latencyMs });
      console.log(`provider simulator listening on ${sim.url}`);
    });

  program.command('sweep').description('Run the maintenance tasks once now (music and image retention sweeps, expired stored responses); the server also runs them periodically.')
    .addOption(configOption())
    .action(async (opts: { config: string }) => {
      const [{ loadConfig }, { createGateway }, { selectPlugins }] = await Promise.all([import('./config.js'), import('../src/gateway.js'), import('../plugins/index.js')]);
      const config = loadConfig(opts.config);
      // Beside a running server on the same SQLite file too: the sweep needs media records and object storage, not the ledger.
      const gateway = await createGateway({ config, plugins: selectPlugins(config), maintenanceOnly: true });
      try {
        const results = await gateway.runTasks();
        if (results.length === 0) console.log('no maintenance task is registered by the loaded plugins');
        for (const r of results) console.log(`${r.task}: ${r.result}`);
      } finally {
        await gateway.close();
      }
    });

  const orgs = program.command('orgs').description('Manage organizations (prepaid credit balance, retention mode).');
  orgs.command('create <name>').description('Create an organization with a starting credit balance.')
    .requiredOption('--credits <usd>', 'starting balance in USD, e.g. 25 or 10.50', usdAmount)
    .addOption(new Option('--retention <mode>', 'keep generated media (standard) or never store it (none)').choices(['standard', 'none']).default('standard'))
    .addOption(configOption())
    .action(async (name: string, opts: { credits: string; retention: Retention; config: string }) => {
      const org = await withStore(opts.config, async (s) => {
        const created = await createOrg(s, name, opts.credits, opts.retention, 'initial credits (gateway orgs create)');
        await recordCommand(s, 'orgs create', { orgId: created.id, targetId: created.id, after: { name: created.name, balance_usd: microsToUsd(created.balanceMicros), retention: created.retention } });
        return created;
      });
      console.log(`created organization "${org.name}" (${org.id}) with ${displayUsd(org.balanceMicros)}, retention ${org.retention}`);
    });
  addOrgsList(orgs);
  orgs.command('show <name>').description('Show an organization and its balance.').addOption(configOption())
    .action(async (name: string, opts: { config: string }) => {
      const org = await withStore(opts.config, (s) => requireOrg(s, name));
      console.log(`${org.name} (${org.id}): balance ${displayUsd(org.balanceMicros)}, retention ${org.retention}`);
    });

  const keys = program.command('keys').description('Manage API keys (stored hashed; the key is shown once).');
  addKeyCommands(keys);
  addKeysList(keys);
  addKeyRotateCommand(keys);
  keys.command('revoke <prefix>').description('Revoke the key starting with PREFIX (the tg_XXXXXXXX part); running instances are told at once (Redis or PostgreSQL), else within their cache TTL.')
    .addOption(configOption())
    .action(async (prefix: string, opts: { config: string }) => {
      const { pushed } = await withStore(opts.config, async (s, inv) => {
        const key = await s.findApiKey(prefix.slice(0, 11));
        if (!key) return revokeKey(s, prefix.slice(0, 11), inv); // refused, naming the prefix
        return changing(s, 'keys revoke', key.orgId, key.id, () => revokeKey(s, prefix.slice(0, 11), inv));
      });
      console.log(`revoked key ${prefix.slice(0, 11)}…${pushed ? ' (every running instance told)' : ''}`);
    });

  program.command('credits').description('Manage prepaid credits.')
    .command('add').description('Add USD credits to an organization.')
    .argument('<usd>', 'amount in USD, e.g. 25 or 10.50', usdAmount)
    .requiredOption('--org <name>', 'organization name').addOption(configOption())
    .action(async (usd: string, opts: { org: string; config: string }) => {
      const balance = await withStore(opts.config, async (s) => {
        const org = await requireOrg(s, opts.org);
        return changing(s, 'credits add', org.id, org.id, () => addCredits(s, opts.org, usd));
      });
      console.log(`added ${displayUsd(parseUsdToMicros(usd))} to "${opts.org}"; balance is now ${displayUsd(balance)}`);
    });

  const providerKeys = program.command('provider-keys').description("Manage an organization's own provider keys (bring your own key).");
  providerKeys.command('set').description('Use this key for the provider on this org\'s requests; such requests are not debited.')
    .requiredOption('--org <name>', 'organization name').requiredOption('--provider <id>', 'provider id from providers/*.yaml')
    .requiredOption('--key <key>', 'the provider API key').addOption(configOption())
    .action(async (opts: { org: string; provider: string; key: string; config: string }) => {
      const { loadAll } = await import('./catalog.js');
      const known = loadAll(opts.config).catalog.providers;
      if (!known.has(opts.provider)) throw new Error(`unknown provider "${opts.provider}" (known: ${[...known.keys()].join(', ')})`);
      const { pushed } = await withStore(opts.config, async (s, inv) => {
        const org = await requireOrg(s, opts.org);
        return changing(s, 'provider-keys set', org.id, opts.provider, () => setProviderKey(s, opts.org, opts.provider, opts.key, inv));
      }, { secrets: true });
      console.log(`set "${opts.org}"'s own key for provider ${opts.provider} (stored encrypted)${pushed ? '; every running instance told' : ''}`);
    });
  providerKeys.command('delete').description("Remove the org's own key for the provider: its requests use the gateway's key again, and are debited.")
    .requiredOption('--org <name>', 'organization name').requiredOption('--provider <id>', 'provider id of the key to remove')
    .addOption(configOption())
    .action(async (opts: { org: string; provider: string; config: string }) => {
      const { pushed } = await withStore(opts.config, async (s, inv) => {
        const org = await requireOrg(s, opts.org);
        return changing(s, 'provider-keys delete', org.id, opts.provider, () => deleteProviderKey(s, opts.org, opts.provider, inv));
      });
      console.log(`deleted "${opts.org}"'s own key for provider ${opts.provider}${pushed ? '; every running instance told' : ''}`);
    });
  addProjectCommands(program);
  addCacheStatsCommand(program);
  addUserCommands(program);
  addLogsCommand(program);
  addAuditCommand(program);
  return program;
}

/** Entry point of bin/gateway.js: config faults print file:line: path: message and exit 2, never a stack. */
export async function main(argv: string[]): Promise<void> {
  try {
    await buildProgram().parseAsync(argv);
  } catch (err) {
    // Loaded by now if the error is one: every command that reads gateway.yaml imported it.
    const { ConfigError, FILE_NOT_FOUND } = await import('../src/config/yaml-file.js');
    if (err instanceof ConfigError) {
      const missing = err.problems.length === 1 && err.problems[0]?.message === FILE_NOT_FOUND;
      console.error(`configuration refused:\n${err.message}${missing ? `\n(give the file with --config FILE; without it, gateway.yaml in the current directory, ${process.cwd()})` : ''}`);
      process.exit(2);
    }
    console.error(`gateway: ${(err as Error).message}`);
    process.exit(1);
  }
}
