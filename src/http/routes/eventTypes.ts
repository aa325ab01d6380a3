import { Hono } from 'hono';
import { dataJsonSchema, EVENT_DATA_SCHEMAS, EVENT_DESCRIPTIONS, type DocumentedEventKind } from '../../webhooks/eventSchemas.js';
import type { AppEnv } from '../env.js';

/**
 * `GET /event-types` (docs/webhooks.md, "Event types"): every event kind with its description and
 * the JSON Schema of its `data`, generated from the schemas OpenAPI's `webhooks` section carries.
 * No key needed; built once, served as is.
 */
export function createEventTypeRoutes(): Hono<AppEnv> {
  const eventTypes = (Object.keys(EVENT_DATA_SCHEMAS) as DocumentedEventKind[]).map((name) => ({ name, description: EVENT_DESCRIPTIONS[name], schema: dataJsonSchema(name) }));
  const app = new Hono<AppEnv>();
  app.get('/event-types', (c) => c.json({ eventTypes }));
  return app;
}
