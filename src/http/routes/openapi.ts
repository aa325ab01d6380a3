import { Hono } from 'hono';
import type { AppEnv } from '../env.js';
import { buildOpenApi } from '../openapi.js';

/** `GET /openapi`: built once, served as is. */
export function createOpenApiRoutes(deps: { version: string }): Hono<AppEnv> {
  const document = buildOpenApi(deps.version);
  const app = new Hono<AppEnv>();
  app.get('/openapi', (c) => c.json(document));
  return app;
}
