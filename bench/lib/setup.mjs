// Preparation and bookkeeping for bench/run.mjs: building dist/, describing the machine,
// installing the Portkey peer, free ports and the generated blocks of docs/benchmarks.md.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { cpus, freemem, platform, release, totalmem } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = dirname(dirname(dirname(fileURLToPath(import.meta.url))));
const BENCH = join(ROOT, 'bench');

function newestMtime(dir, filter) {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, entry.name);
    if (entry.isDirectory()) newest = Math.max(newest, newestMtime(p, filter));
    else if (filter(entry.name)) newest = Math.max(newest, statSync(p).mtimeMs);
  }
  return newest;
}

/** Builds dist/ when it is missing or older than a source file; a failed build falls back to an existing dist/. */
export function ensureBuilt(say) {
  const marker = join(ROOT, 'dist', 'cli', 'index.js');
  const isSource = (n) => n.endsWith('.ts') && !n.endsWith('.test.ts');
  const newestSource = Math.max(...['src', 'plugins', 'simulator', 'cli'].map((d) => newestMtime(join(ROOT, d), isSource)));
  if (existsSync(marker) && statSync(marker).mtimeMs >= newestSource) return;
  say(existsSync(marker) ? 'dist/ is older than the sources: npm run build' : 'dist/ is missing: npm run build');
  const r = spawnSync('npm', ['run', 'build'], { cwd: ROOT, stdio: 'inherit' });
  if (r.status !== 0) {
    if (!existsSync(marker)) throw new Error('npm run build failed and there is no dist/ to fall back on');
    say('WARNING: npm run build failed; measuring the existing (stale) dist/');
  }
}

export function machine() {
  const cpuinfo = existsSync('/proc/cpuinfo') ? readFileSync('/proc/cpuinfo', 'utf8') : '';
  let nproc;
  try {
    nproc = Number(execFileSync('nproc', { encoding: 'utf8' }).trim());
  } catch {
    nproc = cpus().length;
  }
  return {
    nproc,
    cpu: /^model name\s*:\s*(.+)$/m.exec(cpuinfo)?.[1]?.trim() ?? cpus()[0]?.model ?? 'unknown',
    memGb: totalmem() / 2 ** 30,
    freeMemGb: freemem() / 2 ** 30,
    os: `${platform()} ${release()}`,
    node: process.version,
  };
}

export function tollgateInfo() {
  const git = (...args) => {
    try {
      return execFileSync('git', args, { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    } catch {
      return '';
    }
  };
  return {
    version: JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).version,
    commit: git('rev-parse', '--short', 'HEAD') || 'unknown',
    dirty: git('status', '--porcelain', '--', 'src', 'plugins', 'simulator', 'cli', 'providers').length > 0,
  };
}

/** Installs bench/peers (Portkey) with npm when it is not there yet. */
export function ensurePeers(say) {
  const dir = join(BENCH, 'peers');
  const entry = join(dir, 'node_modules', '@portkey-ai', 'gateway', 'build', 'start-server.js');
  if (existsSync(entry)) return entry;
  say('installing Portkey into bench/peers (npm install)…');
  const r = spawnSync('npm', ['install', '--no-audit', '--no-fund', '--loglevel=error'], { cwd: dir, encoding: 'utf8', timeout: 180_000 });
  if (r.status !== 0 || !existsSync(entry)) throw new Error(`npm install in bench/peers failed: ${(r.stderr || r.error?.message || '').trim().split('\n').slice(-3).join(' ')}`);
  return entry;
}

export async function freePort() {
  const { createServer } = await import('node:net');
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

/** Replaces the generated blocks of docs/benchmarks.md (between the bench:… markers). */
export function updateDocs(resultsMd, profileMd) {
  const file = join(ROOT, 'docs', 'benchmarks.md');
  let doc = readFileSync(file, 'utf8');
  const replace = (name, content) => {
    const begin = `<!-- bench:${name}:begin -->`;
    const end = `<!-- bench:${name}:end -->`;
    const a = doc.indexOf(begin);
    const b = doc.indexOf(end);
    if (a < 0 || b < a) throw new Error(`docs/benchmarks.md has no ${begin} … ${end} block`);
    doc = `${doc.slice(0, a + begin.length)}\n${content}\n${doc.slice(b)}`;
  };
  replace('results', resultsMd);
  if (profileMd) replace('profile', profileMd);
  writeFileSync(file, doc);
}
