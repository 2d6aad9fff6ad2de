import fastifySwagger from '@fastify/swagger';
import { Ajv, type Options as AjvOptions } from 'ajv';
import addFormatsImport from 'ajv-formats';
import type { FastifyInstance, FastifyReply, FastifyRequest, FastifySchema, FastifySchemaValidationError } from 'fastify';
import { GatewayError, invalidField } from '../lib/errors.js';
import type { OrgRouteDef } from '../pipeline/plugin.js';
import type { Store } from '../store/types.js';
import type { MembershipChange } from '../store/accounts.js';
import type { ActivationChange } from '../store/lifecycle.js';
import { audited, auditedPluginRoute } from './audit-hook.js';
import { ROUTE_AUDIT, type RouteAudit } from './audit-routes.js';
import { authorize, scopeOf, callerOf } from './authn.js';
import type { ApiRoutes, RouteKey } from './api-types.js';
import type { Access } from './roles.js';
import { fieldLabel, ruleMessage } from '../lib/field-messages.js';
import { ERROR_BODY, input, list, params, type JsonSchema } from './schemas.js';

/** A management route: who may call it (`access`), its schemas, its handler. */
export interface ManagementRoute {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  url: string;
  /** Who may call it (src/management/roles.ts); checked before validation and the handler. */
  access: Access;
  summary: string;
  tag: string;
  schema: { body?: JsonSchema; querystring?: JsonSchema; params?: JsonSchema; response: Record<number, JsonSchema> };
  handler(request: FastifyRequest, reply: FastifyReply): Promise<unknown>;
}

type Method = ManagementRoute['method'];
/** What the route's schemas accept, from src/management/api-types.ts (generated from those schemas: `npm run gen:api`). */
type Accepts<K extends string> = K extends RouteKey ? ApiRoutes[K] : { body: unknown; query: unknown; params: unknown };
/** The request a route's handler gets: body, query and path parameters typed as its schemas validated them. */
export type RouteRequest<K extends string> = FastifyRequest<{ Body: Accepts<K>['body']; Querystring: Accepts<K>['query']; Params: Accepts<K>['params'] }>;

export interface TypedRoute<M extends Method, U extends string> extends Omit<ManagementRoute, 'method' | 'url' | 'handler'> {
  method: M;
  url: U;
  handler(request: RouteRequest<`${M} ${U}`>, reply: FastifyReply): Promise<unknown>;
}

/**
 * A management route whose handler sees `request.body`, `.query` and `.params` typed
 * from its own schemas (through the generated api-types.ts; a route added since the
 * last `npm run gen:api` sees `unknown` until it is run).
 */
export function route<M extends Method, U extends string>(def: TypedRoute<M, U>): ManagementRoute {
  return def as unknown as ManagementRoute;
}

/** `value`, or a 404 `not_found` saying "No <what>" when there is none (nothing found, nothing changed; a count is not accepted: 0 would pass). */
export function found<T extends object | string | true>(value: T | null | undefined | false, what: string): T {
  if (value === null || value === undefined || value === false) throw new GatewayError('not_found', [`No ${what}`]);
  return value;
}

/** A change that keeps every org an owner (a role, a removal, a deactivation): done, else a 404 "No <what>" or a 409 `last_owner`. */
export function changed(result: MembershipChange | ActivationChange, what: string): void {
  found(result !== 'not_found', what);
  if (result === 'last_owner') throw new GatewayError('last_owner');
}

/** A GET route answering a list of the caller's org's rows as `{ data: [...] }`, each row its view (`item`). */
export function orgListRoute(def: Pick<ManagementRoute, 'access' | 'tag' | 'summary'> & {
  url: string; item: JsonSchema; list(orgId: string): Promise<unknown[]>;
}): ManagementRoute {
  return route({
    method: 'GET', url: def.url, access: def.access, tag: def.tag, summary: def.summary,
    schema: { params: params('org'), response: { 200: list(def.item) } },
    async handler(request) {
      return { data: await def.list(scopeOf(request).org.id) };
    },
  });
}

// ajv-formats is CommonJS; its default export arrives as the module object under ESM.
const addFormats = ((addFormatsImport as unknown as { default?: typeof addFormatsImport }).default ?? addFormatsImport) as unknown as (ajv: Ajv) => Ajv;

/**
 * Two validators: query strings and path parameters arrive as text and are coerced
 * (`limit=50` is a number), bodies are JSON and are not (`"5"` is not 5). Neither
 * drops unknown fields: a schema's `additionalProperties: false` refuses them.
 */
function validators(): { coercing: Ajv; strict: Ajv } {
  const base: AjvOptions = { allErrors: false, useDefaults: true, removeAdditional: false, strict: false };
  return { coercing: addFormats(new Ajv({ ...base, coerceTypes: true })), strict: addFormats(new Ajv({ ...base, coerceTypes: false })) };
}

/** A fastify validation failure as the standard 400, naming the field (`param`). */
function validationError(errors: FastifySchemaValidationError[], where: string): GatewayError {
  const e = errors[0];
  const path = (e?.instancePath ?? '').split('/').filter(Boolean).map((p) => (/^\d+$/.test(p) ? `[${p}]` : `.${p}`)).join('').replace(/^\./, '');
  const p = (e?.params ?? {}) as { missingProperty?: string; additionalProperty?: string };
  const join = (name: string): string => (path ? `${path}.${name}` : name);
  if (p.missingProperty) return invalidField(join(p.missingProperty), `${fieldLabel(join(p.missingProperty))} is required`);
  // The one message that names the field as sent: a field the API does not know has no label.
  if (p.additionalProperty) return invalidField(join(p.additionalProperty), `"${join(p.additionalProperty)}" is not a known field of the ${where}`);
  const field = path || where;
  return invalidField(path, `${fieldLabel(field)} ${e ? ruleMessage(e) : 'is invalid'}`);
}

const SECURITY = [{ session: [] }, { token: [] }];

function fastifySchema(def: { summary: string; tag: string; schema: ManagementRoute['schema'] }, access: Access | string): FastifySchema {
  const { response, ...rest } = def.schema;
  return {
    ...rest,
    // A route without query parameters refuses any (400 naming it), like an unknown body field.
    querystring: rest.querystring ?? input({}),
    summary: def.summary,
    description: `Needs: ${access}.`,
    tags: [def.tag],
    ...(access === 'public' ? {} : { security: SECURITY }),
    response: { ...response, '4xx': ERROR_BODY, '5xx': ERROR_BODY },
  } as FastifySchema;
}

function addRoute(app: FastifyInstance, store: Store, def: ManagementRoute): void {
  const key = `${def.method} ${def.url}`;
  const access: Access | undefined = def.access;
  if (!access) throw new Error(`management route ${key} declares no access (src/management/roles.ts)`);
  // Every change goes through the audit log: a mutating route must say what it records.
  const audit: RouteAudit | undefined = def.method === 'GET' ? undefined : (ROUTE_AUDIT as Record<string, RouteAudit>)[key];
  if (def.method !== 'GET' && !audit) throw new Error(`management route ${key} has no entry in ROUTE_AUDIT (src/management/audit-routes.ts)`);
  app.route({
    method: def.method, url: def.url, config: { access }, schema: fastifySchema(def, access),
    schemaErrorFormatter: validationError, handler: audit ? audited(store, def.url, audit, def.handler) : def.handler,
  });
}

/** A plugin's org-scoped route, under /api/v1/orgs/:org, authenticated and scoped by the core. */
function addOrgRoute(app: FastifyInstance, store: Store, def: OrgRouteDef): void {
  if (!def.url.startsWith('/') || /\/:org(\/|$)/.test(def.url)) throw new Error(`org route ${def.url}: give the path under /api/v1/orgs/:org, starting with /`);
  const paramNames = [...def.url.matchAll(/:([A-Za-z_]+)/g)].map((m) => m[1] as string);
  const schema = def.schema ?? {};
  const handler = async (request: FastifyRequest, reply: FastifyReply): Promise<unknown> => {
    const scope = scopeOf(request);
    return def.handler({ org: scope.org, role: scope.role, userId: callerOf(request).user.id }, request, reply);
  };
  app.route({
    method: def.method, url: `/api/v1/orgs/:org${def.url}`, config: { access: def.role },
    schema: fastifySchema({ summary: def.summary, tag: def.tag ?? 'plugins', schema: { ...schema, params: schema.params ?? params('org', ...paramNames), response: schema.response ?? {} } }, def.role),
    schemaErrorFormatter: validationError,
    handler: def.method === 'GET' ? handler : auditedPluginRoute(store, def.method, def.url, def.tag ?? 'plugin', handler),
  });
}

export interface ManagementSurface {
  routes: readonly ManagementRoute[];
  orgRoutes: readonly OrgRouteDef[];
  /** Where the audit log is appended (every mutating route). */
  store: Store;
  authorize: (request: FastifyRequest, access: Access) => Promise<void>;
}

/**
 * Mounts the management API on the gateway's fastify app: `/api/v1/…` and the OpenAPI
 * document at `/api/openapi.json`, generated by @fastify/swagger from the routes' own
 * schemas. Routes and plugin routes are read when fastify loads its plugins (at
 * listen), so plugins registered after this call are included.
 */
export function mountManagement(app: FastifyInstance, surface: () => ManagementSurface, version: string): void {
  void app.register(fastifySwagger, {
    openapi: {
      openapi: '3.1.0',
      info: { title: 'Tollgate management API', version, description: 'Organizations, projects, keys, members, logs and usage. See docs/management.md.' },
      components: {
        securitySchemes: {
          session: { type: 'apiKey', in: 'cookie', name: 'tollgate_session', description: 'The console session (POST /api/v1/session)' },
          token: { type: 'http', scheme: 'bearer', description: 'A management token, tgm_… (POST /api/v1/tokens)' },
        },
      },
    },
    hideUntagged: true,
  });
  void app.register(async (api) => {
    const { coercing, strict } = validators();
    api.setValidatorCompiler(({ schema, httpPart }) => (httpPart === 'body' ? strict : coercing).compile(schema));
    api.decorateRequest('caller', undefined);
    api.decorateRequest('orgScope', undefined);
    const { routes, orgRoutes, store, authorize: check } = surface();
    api.addHook('onRequest', async (request, reply) => {
      void reply.header('cache-control', 'no-store');
      const access = request.routeOptions.config.access;
      if (access) await check(request, access);
    });
    for (const r of routes) addRoute(api, store, r);
    for (const r of orgRoutes) addOrgRoute(api, store, r);
    api.get('/api/openapi.json', { config: { access: 'public' }, schema: { hide: true } as FastifySchema }, async () => api.swagger());
  });
}

export { authorize };
export type { RouteKey };
