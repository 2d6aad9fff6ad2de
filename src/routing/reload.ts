import { watch, type FSWatcher } from 'node:fs';
import type { GatewayConfig } from '../config/gateway-config.js';
import { ConfigError, formatProblem } from '../config/yaml-file.js';
import type { ProviderCatalog } from '../providers/catalog.js';
import type { RoutingSettings } from '../model/routing.js';

/** A gateway.yaml and the providers it loaded, validated whole, ready to serve. */
export interface LoadedConfig {
  config: GatewayConfig;
  catalog: ProviderCatalog;
  settings: RoutingSettings;
}

/** What one reload did (`POST /api/v1/reload` answers it). */
export interface ReloadResult {
  result: 'ok' | 'error';
  /** The problems of a refused config, each `file:line: path: message`, as at boot. */
  problems: string[];
  /** Settings that differ from the running ones and take effect only at the next restart. */
  restartNeeded: string[];
  trigger: ReloadTrigger;
  at: number;
}

export type ReloadTrigger = 'signal' | 'api' | 'watch';

/** What the reloader needs from the logger (pino's shape). */
export interface ReloadLog {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

export interface ReloaderOptions {
  /** The configuration the process started with: settings outside routing are compared with it. */
  running: GatewayConfig;
  /** Reads and validates gateway.yaml and providers/ again; throws ConfigError (or another error) when they do not load. */
  load(): LoadedConfig;
  /** Serves the loaded config to new requests (one swap of the catalogue and of the routing settings). */
  apply(next: LoadedConfig): void;
  log: ReloadLog;
  onResult?: (r: ReloadResult) => void;
  now: () => number;
  /** How long file changes are gathered before one reload (an editor writes a file in several steps). */
  debounceMs?: number;
}

/**
 * The parts of gateway.yaml a reload applies: the providers (keys, weights, capacity, base
 * URLs, which files are loaded) and routing (strategy, cooldown, model groups). Every other
 * setting is read once at start; one that differs in the new file is named in the log.
 */
const RELOADED = new Set<keyof GatewayConfig>(['providers', 'providersDir', 'routing', 'models', 'file', 'lineOf']);

/**
 * Hot reload of gateway.yaml and providers/ (docs/routing.md, "Hot reload"): on SIGHUP,
 * `POST /api/v1/reload` (`gateway reload`), or a change of the files (debounced). The new
 * config is validated whole; an invalid one leaves the running config serving and logs
 * its problems. Requests already routed finish on the config they started with.
 */
export class ConfigReloader {
  private watchers: FSWatcher[] = [];
  private timer: NodeJS.Timeout | undefined;
  private last: ReloadResult | undefined;

  constructor(private readonly opts: ReloaderOptions) {}

  /** The latest reload's outcome, if any. */
  get lastResult(): ReloadResult | undefined {
    return this.last;
  }

  reload(trigger: ReloadTrigger): ReloadResult {
    const at = this.opts.now();
    let next: LoadedConfig;
    try {
      next = this.opts.load();
    } catch (err) {
      const problems = err instanceof ConfigError ? err.problems.map(formatProblem) : [(err as Error).message];
      this.opts.log.error({ trigger, problems }, `configuration not reloaded: ${problems.length} problem(s); the running configuration keeps serving\n${problems.join('\n')}`);
      return this.done({ result: 'error', problems, restartNeeded: [], trigger, at });
    }
    const restartNeeded = restartOnly(this.opts.running, next.config);
    this.opts.apply(next);
    if (restartNeeded.length > 0) {
      this.opts.log.warn({ trigger, restartNeeded }, `configuration reloaded, but these settings changed and take effect only after a restart: ${restartNeeded.join(', ')}`);
    } else {
      this.opts.log.info({ trigger }, 'configuration reloaded');
    }
    return this.done({ result: 'ok', problems: [], restartNeeded, trigger, at });
  }

  /**
   * Reloads when a watched file changes, once per burst of changes. Folders are watched (an
   * editor that saves by renaming would leave a watch on the file itself behind), each with
   * the names in it that count: gateway.yaml in its folder, any YAML file in providers/.
   */
  watch(paths: ReadonlyArray<{ dir: string; match: (name: string) => boolean }>): void {
    const debounce = this.opts.debounceMs ?? 300;
    for (const { dir: path, match } of paths) {
      try {
        const w = watch(path, { persistent: false }, (_event, name) => {
          if (name !== null && !match(name.toString())) return;
          clearTimeout(this.timer);
          this.timer = setTimeout(() => this.reload('watch'), debounce);
        });
        w.on('error', () => undefined);
        this.watchers.push(w);
      } catch (err) {
        this.opts.log.warn({ path, err: (err as Error).message }, 'cannot watch this path for changes; reload with SIGHUP or `gateway reload`');
      }
    }
  }

  close(): void {
    clearTimeout(this.timer);
    for (const w of this.watchers) w.close();
    this.watchers = [];
  }

  private done(r: ReloadResult): ReloadResult {
    this.last = r;
    this.opts.onResult?.(r);
    return r;
  }
}

/** The settings outside routing that differ (`server.port`, `database.url`, …): names only, never values (they may be secrets). */
function restartOnly(running: GatewayConfig, next: GatewayConfig): string[] {
  const changed: string[] = [];
  for (const key of Object.keys(running) as Array<keyof GatewayConfig>) {
    if (RELOADED.has(key)) continue;
    const a = running[key] as unknown;
    const b = next[key] as unknown;
    if (isPlain(a) && isPlain(b)) {
      for (const sub of new Set([...Object.keys(a), ...Object.keys(b)])) {
        if (JSON.stringify(a[sub]) !== JSON.stringify(b[sub])) changed.push(yamlName(`${key}.${sub}`));
      }
    } else if (JSON.stringify(a) !== JSON.stringify(b)) changed.push(yamlName(key));
  }
  return changed;
}

/** Settings whose gateway.yaml name is not their snake_case form. */
const YAML_NAMES: Record<string, string> = { 'database.balance_slice_micros': 'database.balance_slice_usd', 'bootstrap.credits': 'bootstrap.credits_usd' };

/** The name a setting has in gateway.yaml (`server.shutdownTimeoutMs` → `server.shutdown_timeout_ms`). */
function yamlName(path: string): string {
  const snake = path.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
  return YAML_NAMES[snake] ?? snake;
}

const isPlain = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
