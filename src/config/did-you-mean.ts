/** "did you mean …?" for a mistyped name: the closest known one, when it is close enough to be a typo. */

/** Edit distance (insert, delete, substitute, swap of two neighbours), case-insensitive. */
function editDistance(a: string, b: string): number {
  const s = a.toLowerCase();
  const t = b.toLowerCase();
  const d: number[][] = Array.from({ length: s.length + 1 }, (_, i) => Array.from({ length: t.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  for (let i = 1; i <= s.length; i++) {
    for (let j = 1; j <= t.length; j++) {
      const row = d[i] as number[];
      const prev = d[i - 1] as number[];
      const cost = s[i - 1] === t[j - 1] ? 0 : 1;
      row[j] = Math.min((prev[j] as number) + 1, (row[j - 1] as number) + 1, (prev[j - 1] as number) + cost);
      if (i > 1 && j > 1 && s[i - 1] === t[j - 2] && s[i - 2] === t[j - 1]) row[j] = Math.min(row[j] as number, ((d[i - 2] as number[])[j - 2] as number) + 1);
    }
  }
  return (d[s.length] as number[])[t.length] as number;
}

/** The known name closest to `name`, if at most a third of its letters (at least 1, at most 3) differ; ties: the first. */
export function closest(name: string, known: Iterable<string>): string | undefined {
  const budget = Math.min(3, Math.max(1, Math.floor(name.length / 3)));
  let best: { name: string; distance: number } | undefined;
  for (const k of known) {
    const distance = editDistance(name, k);
    if (distance <= budget && (!best || distance < best.distance)) best = { name: k, distance };
  }
  return best?.name;
}

/**
 * For ids made of words (`claude-3-5-haiku`): the typo match above, else the known id that
 * shares the most words with `name`, at least two of them not numbers (`claude-haiku-4-5`:
 * claude, haiku, 5); ties: the first.
 */
export function closestByWords(name: string, known: Iterable<string>): string | undefined {
  const list = [...known];
  const typo = closest(name, list);
  if (typo) return typo;
  const words = new Set(name.toLowerCase().split(/[-_.:/\s]+/).filter(Boolean));
  let best: { name: string; shared: number } | undefined;
  for (const k of list) {
    const shared = [...new Set(k.toLowerCase().split(/[-_.:/\s]+/))].filter((w) => words.has(w));
    if (shared.filter((w) => !/^\d+$/.test(w)).length < 2) continue;
    if (!best || shared.length > best.shared) best = { name: k, shared: shared.length };
  }
  return best?.name;
}
