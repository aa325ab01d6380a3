import type { Server } from 'node:http';
import { WebSocketServer, type WebSocket } from 'ws';
import type { Logger } from '../../lib/logger.js';
import type { EmbeddedBackend } from './backend.js';

/** How often pending signature subscriptions look for their transaction. */
const CHECK_MS = 200;

/**
 * The PubSub side of the local cluster, as much as clients need to confirm transactions:
 * `signatureSubscribe` (notified once the signature is processed, which on this chain means final),
 * `signatureUnsubscribe`, and an acknowledged no-op for the other `*Subscribe` methods.
 * web3.js `confirmTransaction` waits for a subscription before it reads the status, so without
 * this it would wait for the blockhash to expire.
 */
export function attachSubscriptions(server: Server, chain: EmbeddedBackend, logger: Logger): { close(): void } {
  const wss = new WebSocketServer({ server, maxPayload: 64 * 1024 });
  let nextId = 1;
  const pending = new Map<number, { socket: WebSocket; signature: string }>();
  const notify = async () => {
    for (const [id, sub] of pending) {
      const info = await chain.signatureInfo(sub.signature);
      if (!info || !pending.has(id)) continue;
      pending.delete(id);
      const params = { result: { context: { slot: info.slot }, value: { err: info.err } }, subscription: id };
      sub.socket.send(JSON.stringify({ jsonrpc: '2.0', method: 'signatureNotification', params }));
    }
  };
  const timer = setInterval(() => {
    if (pending.size > 0) notify().catch((error: unknown) => logger.warn({ err: error }, 'signature notification failed'));
  }, CHECK_MS);
  timer.unref();

  wss.on('connection', (socket) => {
    socket.on('message', (raw) => {
      let request: { id?: unknown; method?: unknown; params?: unknown };
      try {
        request = JSON.parse(String(raw)) as typeof request;
      } catch {
        return socket.send(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Parse error' } }));
      }
      const { id, method } = request;
      const params = Array.isArray(request.params) ? request.params : [];
      const reply = (result: unknown) => socket.send(JSON.stringify({ jsonrpc: '2.0', id, result }));
      if (typeof method !== 'string') return socket.send(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32600, message: 'Invalid request' } }));
      if (method === 'signatureSubscribe' && typeof params[0] === 'string') {
        const subscription = nextId++;
        pending.set(subscription, { socket, signature: params[0] });
        reply(subscription);
        void notify();
        return;
      }
      if (method.endsWith('Unsubscribe')) {
        pending.delete(Number(params[0]));
        return reply(true);
      }
      if (method.endsWith('Subscribe')) return reply(nextId++);
      socket.send(JSON.stringify({ jsonrpc: '2.0', id, error: { code: -32601, message: 'Method not found' } }));
    });
    socket.on('close', () => {
      for (const [id, sub] of pending) if (sub.socket === socket) pending.delete(id);
    });
  });
  return {
    close() {
      clearInterval(timer);
      for (const client of wss.clients) client.terminate();
      wss.close();
    },
  };
}
