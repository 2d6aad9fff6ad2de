import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import type { LogRow, Settlement } from '../store/types.js';

/** What a spill file holds: log rows not yet written and the settlements that go with them. */
export interface Spilled {
  rows: LogRow[];
  settlements: Settlement[];
}

const PREFIX = 'ledger-spill-';

/**
 * The durable copy of what a PostgreSQL instance could not write yet. While the database
 * is away the request-log writer keeps rows (and the store their settlements) in memory
 * and retries; after each failed flush the whole backlog is written here (a new file,
 * then renamed over the old one), and removed once a flush leaves nothing behind. A
 * process that died with a file behind it (its pid is gone) is replayed by the next
 * gateway started on this host: its rows are queued again and their settlements adopted,
 * written together. Replaying twice charges once (one charge per request id in the ledger).
 */
export class LedgerSpill {
  readonly file: string;

  constructor(private readonly dir: string) {
    this.file = join(dir, `${PREFIX}${hostname()}-${process.pid}.json`);
  }

  write(spilled: Spilled): void {
    mkdirSync(this.dir, { recursive: true });
    const tmp = `${this.file}.tmp`;
    writeFileSync(tmp, JSON.stringify(spilled));
    renameSync(tmp, this.file);
  }

  clear(): void {
    rmSync(this.file, { force: true });
  }

  /** Files left by processes of this host that are gone, with what they hold; `remove` each once it is taken over. */
  orphans(): Array<{ file: string; spilled: Spilled }> {
    let names: string[];
    try {
      names = readdirSync(this.dir);
    } catch {
      return [];
    }
    const out: Array<{ file: string; spilled: Spilled }> = [];
    for (const name of names) {
      const m = new RegExp(`^${PREFIX}(.+)-(\\d+)\\.json$`).exec(name);
      if (!m || m[1] !== hostname() || !processGone(Number(m[2])) || Number(m[2]) === process.pid) continue;
      const file = join(this.dir, name);
      out.push({ file, spilled: JSON.parse(readFileSync(file, 'utf8')) as Spilled });
    }
    return out;
  }
}

function processGone(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return false;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ESRCH';
  }
}
