import type { OpenApiDocument, OpenApiOperation } from './openapi-doc.js';
import { canonical, comment, defaultedFields, documentSchemas, jsonSchemaOf, parameters, propsOf, requiredOf, TypeWriter, type NamedType, type Rendered } from './openapi-types.js';

/*
 * The files `npm run gen:api` writes, each shape in one of them once.
 *
 * server (src/management/): api-types.ts — the request contract, shared by the handlers and
 *   the console: the named shapes the requests use; `ApiRequests`, one row per route with
 *   the query and body a client sends (a route's path parameters are the `:names` of its
 *   key, each a string); `ApiDefaults`, the fields validation fills in; and `ApiRoutes`,
 *   what a handler receives (those fields always present).
 * console (console/src/): api-types/answers.ts — every route's answer; api-types/<group>.ts —
 *   the answers' named shapes, each with the routes (`GROUPS`) that first use it; and
 *   api-types.ts, `ApiRoutes` made from them and the request contract (imported type-only:
 *   erased from the bundle), every named shape re-exported.
 */

/** Which folder's files: src/management/ (the request contract) or console/src/. */
export type TypesTarget = 'server' | 'console';

type Schema = Record<string, unknown>;
type Part = 'query' | 'body' | 'response';

/**
 * The console's shapes files, by the tags of the routes that use a shape: a shape used by
 * several groups lives in the first; a tag not listed here (a new one) counts as the last.
 */
const GROUPS: Record<string, readonly string[]> = {
  account: ['session', 'tokens', 'users', 'orgs', 'members', 'invitations', 'credits', 'provider-keys', 'webhooks'],
  projects: ['projects', 'keys'],
  logs: ['logs', 'usage', 'audit', 'routing'],
};
const GROUP_NAMES = Object.keys(GROUPS);
const groupOf = (tag: string): string => GROUP_NAMES.find((g) => GROUPS[g]?.includes(tag)) ?? (GROUP_NAMES.at(-1) as string);

/** One route's types: its key as the routes are written (`"METHOD /path/:param"`) and what it takes and answers. */
interface RouteTypes {
  key: string;
  group: string;
  summary: unknown;
  parts: Partial<Record<Part, string>>;
  /** Named shapes its query and body use, and those its answer uses. */
  takes: Set<string>;
  /** The query and body fields validation fills in (`defaultedFields`). */
  defaults: Partial<Record<'query' | 'body', string[]>>;
  answers: Set<string>;
}

/** A type that uses no named type and holds no shape (a reference, `null`). */
const bare = (text: string): Rendered => ({ text, refs: new Set(), shapes: [] });

/** The earlier route parts of one kind, to write a repeated one by reference. */
class PartIndex {
  private readonly seen: Array<{ route: string; text: string; schema: Schema | undefined }> = [];

  constructor(private readonly table: string, private readonly part: Part) {}

  /**
   * The part as written: a reference to an earlier route's when it is the same, or when it
   * holds four or more of that one's fields alike (`Pick<…, 'from' | 'to' | …> & { format: … }`).
   */
  write(route: string, r: Rendered, schema: Schema | undefined, writer: TypeWriter): Rendered {
    const same = r.text.includes('\n') ? this.seen.find((s) => s.text === r.text) : undefined;
    if (same) return bare(`${this.table}['${same.route}']['${this.part}']`);
    // A titled part is a name already; an untitled one may be written from an earlier one.
    const derived = schema && schema.title === undefined ? this.derive(schema, writer) : undefined;
    this.seen.push({ route, text: r.text, schema });
    return derived ?? r;
  }

  private derive(schema: Schema, writer: TypeWriter): Rendered | undefined {
    const props = propsOf(schema);
    const required = requiredOf(schema);
    let best: { route: string; shared: string[] } | undefined;
    for (const s of this.seen) {
      if (s.schema?.title !== undefined) continue;
      const theirs = propsOf(s.schema ?? {});
      const theirRequired = requiredOf(s.schema ?? {});
      const shared = Object.keys(theirs).filter((k) => props[k] && canonical(props[k]) === canonical(theirs[k]) && required.has(k) === theirRequired.has(k));
      if (shared.length >= 4 && shared.length > (best?.shared.length ?? 0)) best = { route: s.route, shared };
    }
    if (!best) return undefined;
    const { route, shared } = best;
    const base = `Pick<${this.table}['${route}']['${this.part}'], ${shared.map((k) => `'${k}'`).join(' | ')}>`;
    const others = Object.entries(props).filter(([k]) => !shared.includes(k));
    if (!others.length) return bare(base);
    const rest = writer.render({ ...schema, properties: Object.fromEntries(others), required: [...required].filter((k) => !shared.includes(k)) });
    return { ...rest, text: `${base} & ${rest.text}` };
  }
}

/** The routes' types, and the named shapes they use. */
function routeTypes(doc: OpenApiDocument): { routes: RouteTypes[]; named: Map<string, NamedType> } {
  const writer = new TypeWriter(documentSchemas(doc));
  const index = { query: new PartIndex('ApiRequests', 'query'), body: new PartIndex('ApiRequests', 'body'), response: new PartIndex('ApiAnswers', 'response') };
  const shapes = new Map<string, string[]>();
  const routes: RouteTypes[] = [];
  for (const [path, ops] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(ops) as Array<[string, OpenApiOperation & { tags?: string[]; summary?: string }]>) {
      const key = `${method.toUpperCase()} ${path.replace(/\{(\w+)\}/g, ':$1')}`;
      const route: RouteTypes = { key, group: groupOf(op.tags?.[0] ?? ''), summary: op.summary, parts: {}, takes: new Set(), answers: new Set(), defaults: {} };
      const pathParams = parameters(op, 'path');
      for (const [name, p] of Object.entries(pathParams.properties as Record<string, Schema>)) {
        // ApiRoutes gives every `:name` of the key as a string: a route declaring otherwise would be typed wrong.
        if (p.type !== 'string' || !(pathParams.required as string[]).includes(name)) throw new Error(`${key}: path parameter ${name} is not a required string (declare it with params() in src/management/schemas.ts)`);
      }
      const add = (part: Part, r: Rendered, schema: Schema | undefined): void => {
        const written = index[part].write(key, r, schema, writer);
        route.parts[part] = written.text;
        for (const ref of written.refs) (part === 'response' ? route.answers : route.takes).add(ref);
        for (const s of written.shapes) shapes.set(s, [...(shapes.get(s) ?? []), `${key} ${part}`]);
      };
      const filled = (part: 'query' | 'body', schema: Schema): void => {
        const fields = defaultedFields(schema, `${key} ${part}`);
        if (fields.length) route.defaults[part] = fields;
      };
      const query = parameters(op, 'query');
      if (Object.keys(query.properties as object).length) {
        add('query', writer.render(query), query);
        filled('query', query);
      }
      const body = jsonSchemaOf(op.requestBody);
      if (body) {
        const r = writer.render(body);
        add('body', { ...r, text: `${r.text}${op.requestBody?.required ? '' : ' | undefined'}` }, op.requestBody?.required ? body : undefined);
        filled('body', body);
      }
      const ok = Object.entries(op.responses ?? {}).filter(([status]) => /^2\d\d$/.test(status)).map(([, r]) => jsonSchemaOf(r));
      const answers = ok.map((s) => (s ? writer.render(s) : bare('null')));
      const text = [...new Set(answers.map((a) => a.text))].join(' | ') || 'never';
      add('response', { text, refs: new Set(answers.flatMap((a) => [...a.refs])), shapes: answers.flatMap((a) => a.shapes) }, ok.length === 1 ? ok[0] : undefined);
      routes.push(route);
    }
  }
  const repeated = [...shapes].find(([, where]) => where.length > 1);
  if (repeated) throw new Error(`an untitled shape stands in ${repeated[1].length} places (${repeated[1].join('; ')}): give its schema a title, so it is written once\n${repeated[0]}`);
  return { routes, named: writer.named };
}

const HEADER = `/*
 * Generated by \`npm run gen:api\` (scripts/gen-api-types.mjs) from the management API's
 * route schemas in src/management/ — do not edit; change the schemas and run it again.
 * test/api-types.test.ts fails while this file is stale.
 */
`;

const byName = (a: string, b: string): number => a.localeCompare(b);

/** Named shapes in reading order: by name, each followed by those written as it `& { … }`. */
function ordered(types: ReadonlyArray<[string, NamedType]>): Array<[string, NamedType]> {
  const baseOf = (t: NamedType): string | undefined => /^(\w+) & /.exec(t.body)?.[1];
  const names = new Set(types.map(([n]) => n));
  const out: Array<[string, NamedType]> = [];
  const place = (base: string | undefined): void => {
    for (const entry of [...types].sort(([a], [b]) => byName(a, b))) {
      const b = baseOf(entry[1]);
      if ((base === undefined ? b === undefined || !names.has(b) : b === base)) {
        out.push(entry);
        place(entry[0]);
      }
    }
  };
  place(undefined);
  return out;
}
const typeDecl = (name: string, t: NamedType): string => `export type ${name} = ${t.body};\n`;

/** A route table's rows (with each route's summary, or without), a row whose parts are each one line on one line. */
function table(name: string, doc: string, routes: readonly RouteTypes[], parts: readonly Part[], summaries = true): string {
  const rows = routes.map((r) => {
    const present = parts.filter((p) => r.parts[p] !== undefined);
    const fields = present.map((p) => `${p}: ${(r.parts[p] as string).replace(/\n/g, '\n    ')};`);
    const row = fields.some((f) => f.includes('\n')) ? `{\n${fields.map((f) => `    ${f}\n`).join('')}  }` : fields.length ? `{ ${fields.join(' ')} }` : '{}';
    return `${summaries ? comment(r.summary, '  ') : ''}  '${r.key}': ${row};\n`;
  });
  return `/** ${doc} */\nexport interface ${name} {\n${rows.join('')}}\n`;
}

/** Every named shape a set of names uses, the names included. */
function closure(names: Iterable<string>, named: Map<string, NamedType>): Set<string> {
  const out = new Set<string>();
  const visit = (n: string): void => {
    if (out.has(n)) return;
    out.add(n);
    for (const r of named.get(n)?.refs ?? []) visit(r);
  };
  for (const n of names) visit(n);
  return out;
}

const CONTRACT = 'contract';
/** Where each named shape is written: `contract` (the request contract, src/management/api-types.ts) when a query or body uses it, else the first group (GROUPS' order) whose answers do, so a file imports only from the ones before it. */
function homes(routes: readonly RouteTypes[], named: Map<string, NamedType>): Map<string, string> {
  const taken = closure(routes.flatMap((r) => [...r.takes]), named);
  const home = new Map<string, string>();
  for (const g of GROUP_NAMES) for (const n of closure(routes.filter((r) => r.group === g).flatMap((r) => [...r.answers]), named)) if (!taken.has(n) && !home.has(n)) home.set(n, g);
  for (const n of taken) home.set(n, CONTRACT);
  return home;
}

/** The `ApiDefaults` rows: per route, the query and body fields validation fills in. */
function defaultsTable(routes: readonly RouteTypes[]): string {
  const rows = routes.filter((r) => r.defaults.query || r.defaults.body).map((r) => {
    const parts = (['query', 'body'] as const).filter((p) => r.defaults[p]).map((p) => `${p}: ${(r.defaults[p] as string[]).map((f) => `'${f}'`).join(' | ')};`);
    return `  '${r.key}': { ${parts.join(' ')} };\n`;
  });
  return `/** The query and body fields each route fills in with their default when a client leaves them out. */\nexport interface ApiDefaults {\n${rows.join('')}}\n`;
}

const TAKEN = (wrap: (part: string, key: 'query' | 'body') => string) => [
  `query: ${wrap('ApiRequests[K] extends { query: infer Q } ? Q : Record<string, never>', 'query')};`,
  `body: ${wrap('ApiRequests[K] extends { body: infer B } ? B : undefined', 'body')};`,
];

function serverFiles(routes: RouteTypes[], named: Map<string, NamedType>): Record<string, string> {
  const home = homes(routes, named);
  const types = ordered([...named].filter(([n]) => home.get(n) === CONTRACT)).map(([n, t]) => typeDecl(n, t));
  const filled = TAKEN((part, key) => `Filled<${part}, DefaultsOf<K, '${key}'>>`);
  return {
    'api-types.ts': `${HEADER}
// The request contract: the console imports it too (type-only), so a request is typed once.

${types.map((t) => `${t}\n`).join('')}${table('ApiRequests', 'What each route takes besides its path parameters: the query and body a client sends (a field with a default may be left out). Each route\'s summary is on its route() and in console/src/api-types/answers.ts.', routes, ['query', 'body'], false)}
${defaultsTable(routes)}
/** The \`:names\` in a route's key. */
type ParamNames<K extends string> = K extends \`\${string}:\${infer P}/\${infer Rest}\` ? P | ParamNames<Rest> : K extends \`\${string}:\${infer P}\` ? P : never;
type DefaultsOf<K, P extends 'query' | 'body'> = K extends keyof ApiDefaults ? (ApiDefaults[K] extends { [X in P]: infer D } ? D : never) : never;
/** A part after validation: the fields named in D always present. */
type Filled<T, D> = [D] extends [never] ? T : T extends object ? T & { [F in D & keyof T]-?: Exclude<T[F], undefined> } : T;

/** What each route's handler receives, validated: path parameters (each \`:name\` of its key, a string), query and body. */
export type ApiRoutes = {
  [K in keyof ApiRequests]: {
    params: [ParamNames<K>] extends [never] ? Record<string, never> : { [P in ParamNames<K>]: string };
${filled.map((t) => `    ${t}\n`).join('')}  };
};

export type RouteKey = keyof ApiRoutes;
`,
  };
}

/** The request contract's path from a console file (console/src/ or console/src/api-types/). */
const contractFrom = (depth: number): string => `${'../'.repeat(depth + 2)}src/management/api-types`;

function consoleFiles(routes: RouteTypes[], named: Map<string, NamedType>): Record<string, string> {
  const home = homes(routes, named);
  const imports = (file: string, names: Iterable<string>): string => {
    const from = new Map<string, string[]>();
    for (const n of new Set(names)) if (home.get(n) !== file) from.set(home.get(n) as string, [...(from.get(home.get(n) as string) ?? []), n]);
    return [...from].sort(([a], [b]) => byName(a, b)).map(([f, ns]) => `import type { ${ns.sort(byName).join(', ')} } from '${f === CONTRACT ? contractFrom(1) : `./${f}`}';\n`).join('');
  };
  const shapesFile = (file: string): string => {
    const mine = ordered([...named].filter(([n]) => home.get(n) === file));
    const uses = imports(file, mine.flatMap(([, t]) => [...t.refs]));
    return `${HEADER}\n${uses}${uses ? '\n' : ''}${mine.map(([n, t]) => typeDecl(n, t)).join('\n')}`;
  };
  const files: Record<string, string> = {};
  for (const g of GROUP_NAMES) files[`api-types/${g}.ts`] = shapesFile(g);
  const answerImports = imports('answers', new Set(routes.flatMap((r) => [...r.answers])));
  files['api-types/answers.ts'] = `${HEADER}\n${answerImports}\n${table('ApiAnswers', 'What each route answers: its 2xx body.', routes, ['response'])}`;
  const from = (f: string): string => (f === CONTRACT ? contractFrom(0) : `./api-types/${f}`);
  const reexports = [...new Set(home.values())].sort(byName).map((f) => `export type { ${[...named.keys()].filter((n) => home.get(n) === f).sort(byName).join(', ')} } from '${from(f)}';\n`);
  files['api-types.ts'] = `${HEADER}
import type { ApiRequests } from '${contractFrom(0)}';
import type { ApiAnswers } from './api-types/answers';

${reexports.join('')}
/** What each route takes (query and body, as a client sends them) and answers (its 2xx body). */
export type ApiRoutes = {
  [K in keyof ApiAnswers & keyof ApiRequests]: {
${TAKEN((part) => part).map((t) => `    ${t}\n`).join('')}  } & ApiAnswers[K];
};

export type RouteKey = keyof ApiRoutes;
`;
  return files;
}

/** The files of a target, by their path under its folder (src/management/, console/src/). */
export function renderApiTypes(doc: OpenApiDocument, target: TypesTarget): Record<string, string> {
  const { routes, named } = routeTypes(doc);
  return target === 'server' ? serverFiles(routes, named) : consoleFiles(routes, named);
}
