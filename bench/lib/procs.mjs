// Child processes of the benchmark: one per server, so each has its own event loop,
// its own CPU time and its own RSS (read from /proc/<pid>/status and /proc/<pid>/stat).
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const live = new Set();
// biome-ignore lint/suspicious/noControlCharactersInRegex: ANSI colour codes begin with ESC (0x1b)
const ANSI = /\x1b\[[0-9;]*m/g;
const CLOCK_TICKS = 100; // USER_HZ on Linux

/**
 * The V8 flags of the `bin/gateway.js` shebang of the checkout at `root` (as `npm start` and
 * the installed command run it), so that a `--compare` baseline runs with its own flags.
 */
export function gatewayNodeFlags(root) {
  const shebang = readFileSync(join(root, 'bin', 'gateway.js'), 'utf8').split('\n', 1)[0];
  return shebang.startsWith('#!') ? shebang.split(/\s+/).filter((w) => /^--[a-z-]+(=\S+)?$/.test(w)) : [];
}

/** The node arguments that run `gateway serve` from the checkout at `root`, with its own V8 flags. */
export function gatewayArgs(root, configFile) {
  return [...gatewayNodeFlags(root), join(root, 'bin', 'gateway.js'), 'serve', '--config', configFile];
}

/** A server process started by the benchmark; stopped by `stop()` or when the benchmark exits. */
export class Child {
  constructor(name, proc) {
    this.name = name;
    this.proc = proc;
    this.pid = proc.pid;
    this.url = undefined;
    this.output = [];
    this.spawnedAt = performance.now();
    this.exited = new Promise((resolve) => proc.once('exit', (code, signal) => resolve({ code, signal })));
  }

  /**
   * Spawns `node [nodeArgs] args` (or `command [nodeArgs] args`, e.g. node under valgrind)
   * and waits until a stdout line matches `ready` (its first capture group, if any, becomes `url`).
   */
  static async start({ name, args, nodeArgs = [], cwd, env, ready, timeoutMs = 30_000, command = process.execPath }) {
    const proc = spawn(command, [...nodeArgs, ...args], { cwd, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    const child = new Child(name, proc);
    live.add(child);
    const keep = (line) => {
      child.output.push(line);
      if (child.output.length > 200) child.output.shift();
    };
    await new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${name} did not become ready within ${timeoutMs} ms:\n${child.tail()}`)), timeoutMs);
      let buffered = '';
      proc.stdout.on('data', (data) => {
        buffered += data.toString('utf8').replace(ANSI, '');
        let nl;
        while ((nl = buffered.indexOf('\n')) >= 0) {
          const line = buffered.slice(0, nl);
          buffered = buffered.slice(nl + 1);
          keep(line);
          const m = child.url === undefined ? ready.exec(line) : null;
          if (m) {
            child.url = m[1] ?? '';
            clearTimeout(timer);
            resolve();
          }
        }
      });
      proc.stderr.on('data', (data) => keep(data.toString('utf8').replace(ANSI, '').trimEnd()));
      proc.once('error', (err) => {
        clearTimeout(timer);
        reject(err);
      });
      proc.once('exit', (code, signal) => {
        clearTimeout(timer);
        reject(new Error(`${name} exited (${signal ?? code}) before it was ready:\n${child.tail()}`));
      });
    });
    return child;
  }

  tail(lines = 20) {
    return this.output.slice(-lines).join('\n');
  }

  get running() {
    return this.proc.exitCode === null && this.proc.signalCode === null;
  }

  /** Current and peak resident set size in MB (VmRSS, VmHWM). */
  memory() {
    try {
      const status = readFileSync(`/proc/${this.pid}/status`, 'utf8');
      const kb = (field) => Number(new RegExp(`^${field}:\\s+(\\d+)`, 'm').exec(status)?.[1] ?? NaN);
      return { rssMb: kb('VmRSS') / 1024, hwmMb: kb('VmHWM') / 1024 };
    } catch {
      return { rssMb: NaN, hwmMb: NaN };
    }
  }

  /** Resets VmHWM to the current RSS (Linux ≥ 4.0), so the next peak is this phase's own. */
  resetPeak() {
    try {
      writeFileSync(`/proc/${this.pid}/clear_refs`, '5');
      return true;
    } catch {
      return false;
    }
  }

  /** User + system CPU time consumed so far, in milliseconds. */
  cpuMs() {
    try {
      const stat = readFileSync(`/proc/${this.pid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS;
    } catch {
      return NaN;
    }
  }

  /** Main-thread (event loop) scheduler times in ms: on a CPU, and runnable but waiting for one. */
  schedMs() {
    try {
      const [run, wait] = readFileSync(`/proc/${this.pid}/schedstat`, 'utf8').split(' ').map(Number);
      return { runMs: run / 1e6, waitMs: wait / 1e6 };
    } catch {
      return { runMs: NaN, waitMs: NaN };
    }
  }

  /** SIGTERM, then SIGKILL after `graceMs`. */
  async stop(graceMs = 10_000) {
    live.delete(this);
    if (!this.running) return this.exited;
    this.proc.kill('SIGTERM');
    const timer = setTimeout(() => this.proc.kill('SIGKILL'), graceMs);
    const result = await this.exited;
    clearTimeout(timer);
    return result;
  }
}

/** Samples the RSS of some children every `intervalMs` and keeps the maximum. */
export class RssSampler {
  constructor(children, intervalMs = 100) {
    this.children = children;
    this.max = new Map(children.map((c) => [c.name, 0]));
    this.samples = [];
    this.timer = setInterval(() => this.sample(), intervalMs);
    this.timer.unref();
    this.started = performance.now();
    this.sample();
  }

  sample() {
    const at = (performance.now() - this.started) / 1000;
    for (const c of this.children) {
      const { rssMb } = c.memory();
      if (rssMb > (this.max.get(c.name) ?? 0)) this.max.set(c.name, rssMb);
      this.samples.push({ name: c.name, at, rssMb });
    }
  }

  stop() {
    clearInterval(this.timer);
    this.sample();
    return this.max;
  }
}

/** CPU ms used so far by every live process whose command name is `comm` (e.g. PostgreSQL's backends); those that exited are not counted. */
export function cpuMsOfCommand(comm) {
  let ticks = 0;
  for (const pid of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      if (stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')) !== comm) continue;
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      ticks += Number(fields[11]) + Number(fields[12]);
    } catch {
      // gone meanwhile
    }
  }
  return (ticks * 1000) / CLOCK_TICKS;
}

function machineTicks() {
  try {
    const [, ...fields] = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).map(Number);
    const total = fields.slice(0, 8).reduce((a, b) => a + b, 0);
    const idle = fields[3] + fields[4];
    return { busyMs: ((total - idle) * 1000) / CLOCK_TICKS, totalMs: (total * 1000) / CLOCK_TICKS };
  } catch {
    return { busyMs: NaN, totalMs: NaN };
  }
}

/**
 * Where the machine's CPUs went during a measurement: each child's CPU, this process
 * (the load generator), everything else on the machine (other users: noise), and how
 * long the measured server's event loop sat runnable waiting for a CPU.
 */
export class CpuMeter {
  constructor(children, server) {
    this.children = children;
    this.server = server;
    this.start = this.snapshot();
  }

  snapshot() {
    return {
      at: performance.now(), machine: machineTicks(), self: process.cpuUsage(), sched: this.server?.schedMs(),
      children: new Map(this.children.map((c) => [c.name, c.cpuMs()])),
    };
  }

  /** Percentages of one CPU (100 = one core busy) over the measured interval. */
  stop() {
    const a = this.start;
    const b = this.snapshot();
    const wallMs = b.at - a.at;
    const pct = (ms) => Math.round((1000 * ms) / wallMs) / 10;
    const perChild = Object.fromEntries(this.children.map((c) => [c.name, pct(b.children.get(c.name) - a.children.get(c.name))]));
    const loadgen = pct((b.self.user - a.self.user + b.self.system - a.self.system) / 1000);
    const machine = pct(b.machine.busyMs - a.machine.busyMs);
    const ours = Object.values(perChild).reduce((x, y) => x + y, 0) + loadgen;
    return {
      ...perChild, loadgen, machine, others: Math.max(0, Math.round(10 * (machine - ours)) / 10),
      serverRunqueueWaitPct: a.sched ? pct(b.sched.waitMs - a.sched.waitMs) : undefined,
      cpuMsByChild: Object.fromEntries(this.children.map((c) => [c.name, b.children.get(c.name) - a.children.get(c.name)])),
    };
  }
}

/** Kills every child still running (the benchmark is exiting, possibly on an error). */
export function killAll() {
  for (const c of live) {
    if (c.running) c.proc.kill('SIGKILL');
  }
  live.clear();
}
