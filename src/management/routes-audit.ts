import type { FastifyReply } from 'fastify';
import { invalidField } from '../lib/errors.js';
import type { AuditCursor, AuditFilter, AuditRow } from '../model/audit.js';
import { scopeOf } from './authn.js';
import type { ManagementDeps } from './deps.js';
import type { ApiRoutes } from './api-types.js';
import { route, type ManagementRoute } from './http.js';
import { decodeCursor, encodeCursor, input, maybe, obj, PAGE_LIMIT, params, str, time, type JsonSchema } from './schemas.js';
import { auditView } from './views.js';

const ANY_OBJECT: JsonSchema = { anyOf: [{ type: 'object', additionalProperties: true }, { type: 'null' }] };

const AUDIT_ROW = obj({
  id: str('aud_…'), at: time('When'), org_id: maybe(str()), action: str('What was done, e.g. key.update_limits (docs/management.md, "Audit log")'),
  target_type: maybe(str()), target_id: maybe(str('The id of what was changed')),
  actor: obj({ type: str('user (session), token, cli ("command line") or anonymous (a failed sign-in)'), user_id: maybe(str()), email: maybe(str()), token_id: maybe(str()) }),
  ip: maybe(str('The client address; null for the CLI')), user_agent: maybe(str()),
  before: { ...ANY_OBJECT, description: 'The changed fields before (secrets masked)' }, after: { ...ANY_OBJECT, description: 'The changed fields after, or the request (secrets masked)' },
}, { title: 'AuditItem' });

const QUERY = input({
  actor: str('A user id, token id, email, or `cli`'), action: str('An action, or a prefix ending in "." (key.)'), target: str('A target id'),
  from: time('From this time (inclusive)'), to: time('Until this time (exclusive)'), limit: PAGE_LIMIT(500, 50), cursor: str(),
  format: str('json (pages), csv or jsonl (every matching row, for export)', { enum: ['json', 'csv', 'jsonl'], default: 'json' }),
});

/** Both routes take the same query (generated from QUERY: `npm run gen:api`). */
type Query = ApiRoutes['GET /api/v1/audit']['query'];

/** The most rows one export holds (narrow by time for more). */
const EXPORT_MAX = 100_000;

function filterOf(q: Query, orgId: string | undefined): AuditFilter {
  const from = q.from === undefined ? undefined : Date.parse(q.from);
  const to = q.to === undefined ? undefined : Date.parse(q.to);
  if (from !== undefined && to !== undefined && from >= to) throw invalidField('from', '"from" must be before "to"');
  return { orgId, actor: q.actor, action: q.action, target: q.target, from, to };
}

const CSV_COLUMNS = ['id', 'at', 'org_id', 'action', 'target_type', 'target_id', 'actor_type', 'actor_user_id', 'actor_email', 'actor_token_id', 'ip', 'user_agent', 'before', 'after'];
const csvCell = (v: unknown): string => {
  const t = v === null || v === undefined ? '' : typeof v === 'string' ? v : JSON.stringify(v);
  // A leading = + - @ would be a formula to a spreadsheet: quoted with a ' first.
  const safe = /^[=+\-@]/.test(t) ? `'${t}` : t;
  return /[",\n\r]/.test(safe) ? `"${safe.replace(/"/g, '""')}"` : safe;
};

/** Rows as CSV (one header line) or JSON lines: the whole filtered log, newest first. */
function exportText(rows: readonly AuditRow[], format: 'csv' | 'jsonl'): string {
  if (format === 'jsonl') return rows.map((r) => `${JSON.stringify(auditView(r))}\n`).join('');
  const lines = rows.map((r) => {
    const v = auditView(r);
    return [v.id, v.at, v.org_id, v.action, v.target_type, v.target_id, v.actor.type, v.actor.user_id, v.actor.email, v.actor.token_id, v.ip, v.user_agent, v.before, v.after].map(csvCell).join(',');
  });
  return `${[CSV_COLUMNS.join(','), ...lines].join('\r\n')}\r\n`;
}

async function answer(d: ManagementDeps, q: Query, reply: FastifyReply, orgId: string | undefined): Promise<unknown> {
  const filter = filterOf(q, orgId);
  if (q.format !== 'json') {
    const rows: AuditRow[] = [];
    let cursor: AuditCursor | undefined;
    for (;;) {
      const page = await d.store.auditLog.list(filter, 1000, cursor);
      rows.push(...page);
      const last = page[page.length - 1];
      if (page.length < 1000 || !last || rows.length >= EXPORT_MAX) break;
      cursor = { at: last.at, id: last.id };
    }
    const name = `audit-${orgId ?? 'all'}.${q.format}`;
    void reply.type(q.format === 'csv' ? 'text/csv; charset=utf-8' : 'application/x-ndjson').header('content-disposition', `attachment; filename="${name}"`);
    return reply.send(exportText(rows.slice(0, EXPORT_MAX), q.format));
  }
  const rows = await d.store.auditLog.list(filter, q.limit + 1, q.cursor === undefined ? undefined : decodeCursor(q.cursor));
  const page = rows.slice(0, q.limit);
  const last = page[page.length - 1];
  return { data: page.map(auditView), next_cursor: rows.length > q.limit && last ? encodeCursor(last.at, last.id) : null };
}

const RESPONSE = { 200: obj({ data: { type: 'array', items: AUDIT_ROW }, next_cursor: maybe(str('Pass as `cursor` for older rows; null on the last page')) }) };

/** The audit log, read only: no route edits or deletes a row (docs/management.md, "Audit log"). */
export function auditRoutes(d: ManagementDeps): ManagementRoute[] {
  return [
    route({
      method: 'GET', url: '/api/v1/orgs/:org/audit', access: 'admin', tag: 'audit',
      summary: 'The org\'s audit log, newest first: who changed what, when, from where, before and after. Filters; cursor paging; `format=csv|jsonl` exports.',
      schema: { params: params('org'), querystring: QUERY, response: RESPONSE },
      async handler(request, reply) {
        return answer(d, request.query, reply, scopeOf(request).org.id);
      },
    }),
    route({
      method: 'GET', url: '/api/v1/audit', access: 'operator', tag: 'audit',
      summary: 'The whole instance\'s audit log (every org, sign-ins, org creation), for operators; same filters and formats.',
      schema: { querystring: QUERY, response: RESPONSE },
      async handler(request, reply) {
        return answer(d, request.query, reply, undefined);
      },
    }),
  ];
}
