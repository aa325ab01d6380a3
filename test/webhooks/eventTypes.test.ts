import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { verifyWebhook } from '../../packages/webhooks/src/index.js';
import { buildOpenApi } from '../../src/http/openapi.js';
import { systemClock } from '../../src/lib/clock.js';
import { WEBHOOK_EVENT_KINDS } from '../../src/webhooks/sampleEvents.js';
import { launchBody, TOKEN_LAUNCH_EVENTS } from '../support/fixtures.js';
import { startTestService, type TestService } from '../support/service.js';
import { startReceiver, type Receiver } from '../support/webhooks.js';

type Json = Record<string, any>;
interface EventType {
  name: string;
  description: string;
  schema: Json;
}

const SECRET = 'whsec_event_types_0123456789';

async function until(check: () => boolean, what: string, ms = 20_000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('GET /api/event-types', () => {
  let t: TestService;
  let receiver: Receiver;
  beforeAll(async () => {
    t = await startTestService();
    receiver = await startReceiver(systemClock);
  });
  afterAll(async () => {
    await t?.close();
    await receiver?.close();
  });

  it('lists every event kind, with a description and the JSON Schema of its data, without a key; the same schemas as OpenAPI', async () => {
    const res = await t.request('/api/event-types');
    expect(res.status).toBe(200);
    const { eventTypes } = (await res.json()) as { eventTypes: EventType[] };
    expect(eventTypes.map((e) => e.name).sort()).toEqual([...WEBHOOK_EVENT_KINDS].sort());
    const openapi = buildOpenApi('1.0.0') as { webhooks: Json };
    for (const type of eventTypes) {
      expect(type.description.length, type.name).toBeGreaterThan(10);
      expect(type.schema.type, type.name).toBe('object');
      expect(type.schema, type.name).toEqual(openapi.webhooks[type.name].post.requestBody.content['application/json'].schema.properties.data);
      expect(openapi.webhooks[type.name].post.description).toContain(type.description);
    }
  });

  it("validates the data of every delivery a real launch sent to a real receiver, and rejects data that lacks a required field", async () => {
    const { eventTypes } = (await (await t.request('/api/event-types')).json()) as { eventTypes: EventType[] };
    // A JSON Schema validator built from the served documents alone (not from our zod schemas).
    const validators = new Map(eventTypes.map((e) => [e.name, z.fromJSONSchema(e.schema as never)]));

    const key = await t.key('acme', ['launches:write', 'launches:read']);
    await t.createLaunch(key, launchBody({ webhookUrl: receiver.url, webhookSecret: SECRET }));
    t.service.start();
    await until(() => receiver.requests.length >= TOKEN_LAUNCH_EVENTS.length, 'the launch deliveries');

    const bodies = receiver.requests.map((r) => verifyWebhook(r.body, r.headers, SECRET).payload as Json);
    expect(bodies.map((b) => b.event).sort()).toEqual([...TOKEN_LAUNCH_EVENTS].sort());
    for (const body of bodies) {
      const result = validators.get(body.event)!.safeParse(body.data);
      expect(result.success, `${body.event}: ${JSON.stringify(result.error?.issues)}`).toBe(true);
    }
    const complete = bodies.find((b) => b.event === 'launch.complete')!;
    expect(validators.get('launch.complete')!.safeParse({ ...complete.data, mint: undefined }).success).toBe(false);
    expect(validators.get('launch.step_complete')!.safeParse({ ...bodies.find((b) => b.event === 'launch.step_complete')!.data, index: 'one' }).success).toBe(false);
  });
});
