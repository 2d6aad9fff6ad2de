/** Plain-text tables for the CLI's list commands: a header row, columns padded to their widest cell, numbers right-aligned. */

export interface Column<T> {
  header: string;
  cell: (row: T) => string;
  /** Right-aligned (amounts, counts). */
  right?: boolean;
}

export function table<T>(columns: readonly Column<T>[], rows: readonly T[]): string {
  const cells = rows.map((r) => columns.map((c) => c.cell(r)));
  const widths = columns.map((c, i) => Math.max(c.header.length, ...cells.map((row) => (row[i] ?? '').length)));
  const line = (values: readonly string[]): string => values
    .map((v, i) => (columns[i]?.right ? v.padStart(widths[i] ?? 0) : v.padEnd(widths[i] ?? 0)))
    .join('  ').trimEnd();
  return [line(columns.map((c) => c.header)), ...cells.map(line)].join('\n');
}

/** A time as the CLI's tables write it: UTC, to the second, `2027-01-31 12:00:00`. */
export const utc = (ms: number | null): string => (ms === null ? '-' : new Date(ms).toISOString().slice(0, 19).replace('T', ' '));
