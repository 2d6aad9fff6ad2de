import type { Command } from 'commander';
import { configOption } from './common.js';

/**
 * `gateway reload`: asks a running gateway to re-read gateway.yaml and providers/
 * (`POST /api/v1/reload`, an operator's management token). The server validates the files
 * whole and keeps its running config when they are invalid; its management API records the
 * reload in the audit log. Each instance reloads its own files: run it once per instance
 * (or send each process SIGHUP).
 */
export function addReloadCommand(program: Command): void {
  program.command('reload').description('Make a running gateway re-read gateway.yaml and providers/ without a restart (POST /api/v1/reload with an operator\'s management token); prints settings that still need a restart.')
    .addOption(configOption())
    .option('--url <url>', 'the instance to reload (default: server.host and server.port of gateway.yaml)')
    .option('--token <tgm_…>', 'an operator\'s management token (default: $TOLLGATE_TOKEN)')
    .action(async (opts: { config: string; url?: string; token?: string }) => {
      const token = opts.token ?? process.env.TOLLGATE_TOKEN;
      if (!token) throw new Error('gateway reload needs an operator\'s management token: --token or TOLLGATE_TOKEN (create one in the console, or POST /api/v1/tokens)');
      let base = opts.url;
      if (base === undefined) {
        const { server } = (await import('./config.js')).loadConfig(opts.config);
        base = `http://${server.host.includes(':') ? `[${server.host}]` : server.host}:${server.port}`;
      }
      const res = await fetch(`${base.replace(/\/+$/, '')}/api/v1/reload`, {
        method: 'POST', headers: { authorization: `Bearer ${token}` }, signal: AbortSignal.timeout(30_000),
      });
      const body = (await res.json()) as { result?: string; restart_needed?: string[]; error?: { message?: string } };
      if (!res.ok) {
        process.exitCode = 1;
        console.error(`not reloaded (${res.status}): ${body.error?.message ?? 'unknown error'}`);
        return;
      }
      console.log(`reloaded ${base}`);
      if (body.restart_needed && body.restart_needed.length > 0) console.log(`these settings changed and take effect only after a restart: ${body.restart_needed.join(', ')}`);
    });
}
