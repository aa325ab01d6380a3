import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { Keypair, PublicKey } from '@solana/web3.js';
import { createEndpointPool, type EndpointPool } from '../../src/chain/rpc/endpoints.js';

/**
 * A provider's 429 holds only the request it answered (docs/chain.md): a real HTTP server on
 * 127.0.0.1 answers the first getBalance of one account 429 with `Retry-After: 4` and every other
 * request at once.
 */
describe('RPC endpoint pool and a 429', () => {
  let server: Server | undefined;
  let pool: EndpointPool | undefined;
  afterEach(async () => {
    pool?.shutdown();
    await new Promise((resolve) => server?.close(resolve));
  });

  it("holds only the limited request for its Retry-After: a read of the same method goes at once", async () => {
    const limited = Keypair.generate().publicKey.toBase58();
    const other = Keypair.generate().publicKey.toBase58();
    const seen: string[] = [];
    server = createServer((req, res) => {
      let body = '';
      req.on('data', (chunk: Buffer) => (body += chunk.toString()));
      req.on('end', () => {
        const call = JSON.parse(body) as { id: unknown; method: string; params: [string] };
        const account = call.params[0];
        const first = !seen.includes(account);
        seen.push(account);
        if (account === limited && first) {
          res.writeHead(429, { 'retry-after': '8', 'content-type': 'application/json' });
          return res.end(JSON.stringify({ jsonrpc: '2.0', id: call.id, error: { code: 429, message: 'Too Many Requests' } }));
        }
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ jsonrpc: '2.0', id: call.id, result: { context: { slot: 1 }, value: 42 } }));
      });
    });
    await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    pool = createEndpointPool([url], { maxInlineRetryAfterMs: 10_000, readHedgeMs: 0 });
    const first = pool.read((c) => c.getBalance(new PublicKey(limited), 'confirmed'));
    for (const deadline = Date.now() + 30_000; !seen.includes(limited); ) {
      if (Date.now() > deadline) throw new Error('the limited read never reached the server');
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    // Another read of the same method, sent while the first waits out its Retry-After, is answered
    // long before those 8 s are over (the bound is far from both: a loopback read takes milliseconds,
    // seconds on a loaded machine; held like the first, it would take about 8 s), and before the
    // limited request goes again.
    const started = Date.now();
    await expect(pool.read((c) => c.getBalance(new PublicKey(other), 'confirmed'))).resolves.toBe(42);
    expect(Date.now() - started).toBeLessThan(6000);
    expect(seen.filter((a) => a === limited)).toHaveLength(1);
    await expect(first).resolves.toBe(42);
    expect(seen).toEqual([limited, other, limited]);
  });
});
