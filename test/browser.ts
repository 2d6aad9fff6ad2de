import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { packageRoot } from '../src/lib/paths.js';

/**
 * Headless Chromium for the console's end-to-end tests: Debian's `chromium` package
 * (CHROMIUM_PATH to use another binary) driven by playwright-core, which downloads no
 * browser. A missing browser fails the test with the fix; it is never skipped.
 */

const CHROMIUM_FLAGS = [
  '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync',
];

function chromiumPath(): string {
  const path = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
  if (!existsSync(path)) {
    throw new Error(`The console tests need Chromium at ${path} and found none: install it with \`apt-get install -y chromium\` (what .ci/run does), or set CHROMIUM_PATH.`);
  }
  return path;
}

function newest(dir: string): number {
  let t = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    t = Math.max(t, e.isDirectory() ? newest(p) : statSync(p).mtimeMs);
  }
  return t;
}

/** Builds the console bundle (dist/console) when it is missing or older than its sources, so the test runs what the sources say. */
export function ensureConsoleBuilt(): void {
  const root = packageRoot();
  const index = join(root, 'dist', 'console', 'index.html');
  const sources = Math.max(newest(join(root, 'console', 'src')), statSync(join(root, 'console', 'index.html')).mtimeMs, statSync(join(root, 'console', 'vite.config.ts')).mtimeMs);
  if (existsSync(index) && statSync(index).mtimeMs >= sources) return;
  execFileSync(process.execPath, [join(root, 'node_modules', 'vite', 'bin', 'vite.js'), 'build', '--config', join(root, 'console', 'vite.config.ts')], { cwd: root, stdio: 'pipe' });
}

/** A browser session that records every console error, page error and request to a host other than the gateway's. */
export interface Browser {
  context: BrowserContext;
  page: Page;
  /** Console errors and uncaught exceptions since the last `takeProblems()`. */
  errors: string[];
  /** Requests to anything but 127.0.0.1 (and data:/blob: URLs). */
  foreign: string[];
  /** Returns and clears what was recorded. */
  takeProblems(): { errors: string[]; foreign: string[] };
  close(): Promise<void>;
}

export async function openBrowser(): Promise<Browser> {
  const executablePath = chromiumPath();
  const profile = mkdtempSync(join(tmpdir(), 'tollgate-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath, headless: true, args: CHROMIUM_FLAGS, viewport: { width: 1280, height: 860 }, timezoneId: 'UTC', locale: 'en-US',
  });
  const page = context.pages()[0] ?? (await context.newPage());
  const errors: string[] = [];
  const foreign: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(`${m.text()} (${m.location().url})`);
  });
  page.on('pageerror', (e) => errors.push(`uncaught: ${e.message}`));
  context.on('request', (r) => {
    const url = r.url();
    if (url.startsWith('data:') || url.startsWith('blob:')) return;
    if (new URL(url).hostname !== '127.0.0.1') foreign.push(url);
  });
  return {
    context, page, errors, foreign,
    takeProblems() {
      return { errors: errors.splice(0), foreign: foreign.splice(0) };
    },
    async close() {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

export interface AxeViolation { id: string; impact: string | null; help: string; nodes: string[] }

/** axe-core's critical and serious findings on the page as it is now (injected from node_modules, not the network). */
export async function axeViolations(page: Page): Promise<AxeViolation[]> {
  // Evaluated through the DevTools protocol: the console's Content-Security-Policy does not apply to it.
  if (!(await page.evaluate('typeof window.axe !== "undefined"'))) await page.evaluate(AXE_SOURCE);
  const found = await page.evaluate(async () => {
    const axe = (window as unknown as { axe: { run(ctx: Document, opts: object): Promise<{ violations: Array<{ id: string; impact: string | null; help: string; nodes: Array<{ target: unknown[] }> }> }> } }).axe;
    const r = await axe.run(document, { resultTypes: ['violations'] });
    return r.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map((n) => JSON.stringify(n.target)) }));
  });
  return found.filter((v) => v.impact === 'critical' || v.impact === 'serious');
}
