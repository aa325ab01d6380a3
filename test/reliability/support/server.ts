import { serve, type ServerType } from '@hono/node-server';
import type { AddressInfo } from 'node:net';
import { Agent, request } from 'undici';
import type { TestService } from '../../support/service.js';

/** The test service behind a real @hono/node-server socket on 127.0.0.1, port chosen by the OS. */
export interface ServedService {
  origin: string;
  send(method: string, path: string, init?: { headers?: Record<string, string>; body?: string | Buffer }): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; text: string }>;
  close(): Promise<void>;
}

export async function serveOnPort(t: TestService): Promise<ServedService> {
  const server: ServerType = await new Promise((resolve) => {
    const s = serve({ fetch: t.service.app.fetch, port: 0, hostname: '127.0.0.1' }, () => resolve(s));
  });
  const { port } = server.address() as AddressInfo;
  const origin = `http://127.0.0.1:${port}`;
  const agent = new Agent({ connections: 8, keepAliveTimeout: 10_000 });
  return {
    origin,
    async send(method, path, init = {}) {
      const res = await request(`${origin}${path}`, { method: method as 'GET', headers: init.headers, body: init.body, dispatcher: agent });
      return { status: res.statusCode, headers: res.headers, text: await res.body.text() };
    },
    async close() {
      await agent.close();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
