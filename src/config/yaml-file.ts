import { readFileSync } from 'node:fs';
import { isMap, isScalar, LineCounter, parseDocument, visit, type Document } from 'yaml';

/** A problem in a config file, located by file, line and JSON path. */
export interface ConfigProblem {
  file: string;
  line: number | undefined;
  path: string;
  message: string;
}

/** Refusal of a config: every problem found, formatted for humans, never a stack trace. */
export class ConfigError extends Error {
  readonly problems: ConfigProblem[];
  constructor(problems: ConfigProblem[]) {
    super(problems.map(formatProblem).join('\n'));
    this.problems = problems;
  }
}

export function formatProblem(p: ConfigProblem): string {
  const where = p.line !== undefined ? `${p.file}:${p.line}` : p.file;
  return p.path ? `${where}: ${p.path}: ${p.message}` : `${where}: ${p.message}`;
}

export interface YamlFile {
  file: string;
  data: unknown;
  /** Line (1-based) of the node at a JSON pointer such as `/server/port`, or of its nearest parent. */
  lineOf(pointer: string): number | undefined;
  /** Line of the key at a JSON pointer (an unknown setting is reported where its name is written). */
  keyLineOf?(pointer: string): number | undefined;
}

const ENV_REF = /\$\{env:([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g;

/**
 * Reads a YAML file keeping line positions, and replaces `${env:NAME}` (or
 * `${env:NAME:-default}`) in string values so that secrets never live in the file.
 * An unset variable without a default is a problem at that line.
 */
export function readYamlFile(file: string, env: NodeJS.ProcessEnv = process.env): YamlFile {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new ConfigError([{ file, line: undefined, path: '', message: unreadable(err as NodeJS.ErrnoException) }]);
  }
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter, prettyErrors: false });
  const first = doc.errors[0];
  if (first) {
    // Only the first: the parser's later errors follow from it (one bad indent gives one per sibling below it).
    const nested = NESTED_KEY.has(first.code) ? doc.errors.find((e) => e.code === 'MULTILINE_IMPLICIT_KEY') : undefined;
    const line = lineCounter.linePos(nested ? nested.pos[1] : first.pos[0]).line;
    throw new ConfigError([{ file, line, path: '', message: syntaxMessage(first.code, first.message) }]);
  }
  const problems: ConfigProblem[] = [];
  visit(doc, {
    Scalar(_key, node, path) {
      if (typeof node.value !== 'string' || !node.value.includes('${env:')) return;
      node.value = node.value.replace(ENV_REF, (_m, name: string, fallback: string | undefined) => {
        const value = env[name];
        if (value !== undefined && value !== '') return value;
        if (fallback !== undefined) return fallback;
        problems.push({
          file, line: node.range ? lineCounter.linePos(node.range[0]).line : undefined,
          path: pointerOf(path), message: `environment variable ${name} is not set`,
        });
        return '';
      });
    },
  });
  if (problems.length > 0) throw new ConfigError(problems);
  return { file, data: doc.toJS() as unknown, lineOf: (pointer) => lineOfPointer(doc, lineCounter, pointer), keyLineOf: (pointer) => lineOfPointer(doc, lineCounter, pointer, true) };
}

export const FILE_NOT_FOUND = 'file not found';

/** Why a file cannot be read, in words: `file not found`, not `ENOENT`. */
function unreadable(err: NodeJS.ErrnoException): string {
  switch (err.code) {
    case 'ENOENT':
      return FILE_NOT_FOUND;
    case 'EACCES':
    case 'EPERM':
      return 'file cannot be read: permission denied';
    case 'EISDIR':
      return 'is a directory, not a YAML file';
    default:
      return `file cannot be read: ${err.code ?? err.message}`;
  }
}

/** The parser's errors for a line indented deeper than the `key: value` above it; the line is where the second one ends. */
const NESTED_KEY = new Set(['BLOCK_AS_IMPLICIT_KEY', 'MULTILINE_IMPLICIT_KEY']);

/** The parser's first error in words; the two indentation slips people make are said as such. */
function syntaxMessage(code: string, message: string): string {
  if (NESTED_KEY.has(code)) return 'YAML syntax: bad indentation: this line is indented more than the key above it, which has a value on its own line; line it up with that key';
  const first = message.split('\n')[0] ?? message;
  if (code === 'BAD_INDENT' && /same column/.test(first)) return 'YAML syntax: bad indentation: this key does not line up with the keys beside it';
  return `YAML syntax: ${first}`;
}

function pointerOf(path: readonly unknown[]): string {
  const keys: string[] = [];
  for (const step of path) {
    if (step && typeof step === 'object' && 'key' in step) {
      const key = (step as { key: unknown }).key;
      keys.push(isScalar(key) ? String(key.value) : String(key));
    } else if (step && typeof step === 'object' && 'items' in step) {
    }
  }
  return keys.length ? `/${keys.join('/')}` : '';
}

function lineOfPointer(doc: Document, lc: LineCounter, pointer: string, keyLine = false): number | undefined {
  const keys = pointer.split('/').slice(1).map((k) => k.replace(/~1/g, '/').replace(/~0/g, '~'))
    .map((k) => (/^\d+$/.test(k) ? Number(k) : k));
  for (let n = keys.length; n >= 0; n--) {
    // `keyLine`: the key's own line (where `sever:` is written), not its value's: a block value starts on the next one.
    const parent = !keyLine || n === 0 ? undefined : n === 1 ? doc.contents : doc.getIn(keys.slice(0, n - 1), true);
    if (isMap(parent)) {
      const pair = parent.items.find((p) => isScalar(p.key) && String(p.key.value) === String(keys[n - 1]));
      const keyRange = isScalar(pair?.key) ? pair.key.range : undefined;
      if (keyRange) return lc.linePos(keyRange[0]).line;
    }
    const node = n === 0 ? doc.contents : doc.getIn(keys.slice(0, n), true);
    const range = (node as { range?: [number, number, number] } | null | undefined)?.range;
    if (range) return lc.linePos(range[0]).line;
  }
  return undefined;
}
