import { createServer } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { serveService } from '../../src/app/serve.js';
import { startTestService, type TestService } from '../support/service.js';

let t: TestService | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** True when a TCP connection to the port is accepted, false when it is refused. */
function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => (socket.destroy(), resolve(true)));
    socket.once('error', () => resolve(false));
  });
}

describe('serving the service', () => {
  it('accepts no connection until the first health report is made, then answers the first one from it', async () => {
    t = await startTestService();
    const service = t.service;
    let finish: () => void = () => undefined;
    const reportHeld = new Promise<void>((resolve) => (finish = resolve));
    let reports = 0;
    const port = await freePort();
    const serving = serveService(
      { ...service, warmUp: async () => (await reportHeld, await service.warmUp(), void (reports += 1)) },
      { port, hostname: '127.0.0.1', limits: { requestTimeoutMs: 5000, maxConnectionsPerClient: 0 } },
    );
    expect(await accepts(port)).toBe(false);
    expect(reports).toBe(0);
    finish();
    const { server } = await serving;
    try {
      expect(reports).toBe(1);
      const res = await fetch(`http://127.0.0.1:${port}/api/health`);
      expect(res.status).toBe(200);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
