import Fastify from 'fastify';
import { GatewayError } from '../lib/errors.js';
import { packageVersion } from '../lib/paths.js';
import type { Store } from '../store/types.js';
import type { ManagementDeps } from './deps.js';
import { mountManagement } from './http.js';
import { managementRoutes } from './index.js';

/** The OpenAPI document as @fastify/swagger writes it (the parts the type generator reads). */
export interface OpenApiDocument {
  paths: Record<string, Record<string, OpenApiOperation>>;
}
export interface OpenApiOperation {
  parameters?: Array<{ in: string; name: string; required?: boolean; schema?: Record<string, unknown>; description?: string }>;
  requestBody?: { required?: boolean; content?: Record<string, { schema?: Record<string, unknown> }> };
  responses?: Record<string, { content?: Record<string, { schema?: Record<string, unknown> }> }>;
}

/**
 * The core's management API document (no plugin routes), built from the route schemas
 * on an app that never listens: what `/api/openapi.json` serves, without a store.
 * `npm run gen:api` turns it into the TypeScript types of the server and the console.
 */
export async function coreOpenApiDocument(): Promise<OpenApiDocument> {
  // No request is served: the routes are built for their schemas only, so nothing of deps is read.
  const deps = {} as ManagementDeps;
  const app = Fastify({ logger: false });
  try {
    mountManagement(app, () => ({
      routes: managementRoutes(deps, undefined),
      orgRoutes: [],
      store: {} as Store,
      authorize: async () => {
        throw new GatewayError('internal_error', ['the document builder serves no requests']);
      },
    }), packageVersion());
    await app.ready();
    return app.swagger() as unknown as OpenApiDocument;
  } finally {
    await app.close();
  }
}
