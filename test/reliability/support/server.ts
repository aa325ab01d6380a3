import { Agent, request } from 'undici';
import { startHttpServer } from '../../../src/http/server.js';
import type { TestService } from '../../support/service.js';

/** The test service behind the server `npm start` runs (socket bounds, health fast path) on 127.0.0.1, port chosen by the OS. */
export interface ServedService {
  origin: string;
  send(method: string, path: string, init?: { headers?: Record<string, string>; body?: string | Buffer }): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; text: string }>;
  close(): Promise<void>;
}

export async function serveOnPort(t: TestService): Promise<ServedService> {
  const { server, port } = await startHttpServer({ fetch: t.service.app.fetch, fastPath: t.service.fastPath, port: 0, hostname: '127.0.0.1', limits: t.config.http });
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
