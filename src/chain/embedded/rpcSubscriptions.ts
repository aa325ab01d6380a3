import type { Server } from 'node:http';
import { WebSocketServer, type WebSocket } from 'ws';
import type { Logger } from '../../lib/logger.js';
import type { EmbeddedBackend } from './backend.js';
import { loopbackOrigin } from './loopbackOrigin.js';

/** How often the pass looks whether a slot went by (it runs at most once per slot). */
const TICK_MS = 100;

/** Pending signature subscriptions allowed per connection and in all (docs/chain.md). */
export const SUBSCRIPTION_LIMITS = { perConnection: 256, total: 2048 };

/** JSON-RPC error code of a subscription refused over a cap. */
const TOO_MANY_SUBSCRIPTIONS = -32005;

/**
 * The PubSub side of the local cluster, as much as clients need to confirm transactions:
 * `signatureSubscribe` (notified once the signature is processed, which on this chain means final),
 * `signatureUnsubscribe`, and an acknowledged no-op for the other `*Subscribe` methods.
 * web3.js `confirmTransaction` waits for a subscription before it reads the status, so without
 * this it would wait for the blockhash to expire.
 *
 * Pending subscriptions are checked in one batched read per slot, and only when a transaction was
 * processed since the last; a new one is checked once, in one read with every other that arrived in
 * the same turn — never all of them per message, so a flood costs a map insert and a lookup each. They are capped per connection and in all; pages on other
 * than loopback origins cannot connect.
 */
export function createSubscriptions(
  chain: EmbeddedBackend,
  logger: Logger,
  limits: { perConnection: number; total: number } = SUBSCRIPTION_LIMITS,
): { attach(server: Server): void; close(): void } {
  const servers: WebSocketServer[] = [];
  let nextId = 1;
  const pending = new Map<number, { socket: WebSocket; signature: string }>();
  const perSocket = new Map<WebSocket, number>();
  const forget = (id: number) => {
    const sub = pending.get(id);
    if (!sub) return false;
    pending.delete(id);
    const left = (perSocket.get(sub.socket) ?? 1) - 1;
    if (left > 0) perSocket.set(sub.socket, left);
    else perSocket.delete(sub.socket);
    return true;
  };

  /** Looks the given subscriptions up in one batched read and notifies those whose signature was processed. */
  const check = async (ids: readonly number[]) => {
    const subs = ids.flatMap((id) => {
      const sub = pending.get(id);
      return sub ? [[id, sub] as const] : [];
    });
    if (subs.length === 0) return;
    const infos = await chain.signatureInfos(subs.map(([, sub]) => sub.signature));
    subs.forEach(([id, sub], i) => {
      const info = infos[i];
      if (!info || !forget(id)) return;
      const params = { result: { context: { slot: info.slot }, value: { err: info.err } }, subscription: id };
      sub.socket.send(JSON.stringify({ jsonrpc: '2.0', method: 'signatureNotification', params }));
    });
  };
  const failed = (error: unknown) => logger.warn({ err: error }, 'signature notification failed');

  // New subscriptions are checked once, together: all those that arrived in one turn of the event
  // loop (a flood arrives in a few) in one read, so a signature already processed is notified at once.
  let fresh: number[] = [];
  let freshScheduled = false;
  const checkFresh = () => {
    const ids = fresh;
    fresh = [];
    check(ids)
      .catch(failed)
      .finally(() => {
        freshScheduled = fresh.length > 0;
        if (freshScheduled) setImmediate(checkFresh);
      });
  };

  // Then every pending subscription once per slot, when a transaction was processed since.
  let checkedSlot = -1;
  let checkedCount = -1;
  let running = false;
  const timer = setInterval(() => {
    if (pending.size === 0 || running) return;
    const slot = chain.now().slot;
    const count = chain.transactionCount();
    if (slot === checkedSlot || count === checkedCount) return;
    checkedSlot = slot;
    checkedCount = count;
    running = true;
    check([...pending.keys()])
      .catch(failed)
      .finally(() => (running = false));
  }, TICK_MS);
  timer.unref();

  const onConnection = (socket: WebSocket) => {
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
      const fail = (code: number, message: string, data?: unknown) => socket.send(JSON.stringify({ jsonrpc: '2.0', id, error: data === undefined ? { code, message } : { code, message, data } }));
      if (typeof method !== 'string') return socket.send(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32600, message: 'Invalid request' } }));
      if (method === 'signatureSubscribe' && typeof params[0] === 'string') {
        const mine = perSocket.get(socket) ?? 0;
        if (mine >= limits.perConnection) {
          return fail(TOO_MANY_SUBSCRIPTIONS, `Too many subscriptions: at most ${limits.perConnection} pending signature subscriptions per connection; unsubscribe or wait for notifications`, { limit: 'perConnection', max: limits.perConnection });
        }
        if (pending.size >= limits.total) {
          return fail(TOO_MANY_SUBSCRIPTIONS, `Too many subscriptions: this local cluster holds at most ${limits.total} pending signature subscriptions in all; try again later`, { limit: 'total', max: limits.total });
        }
        const subscription = nextId++;
        pending.set(subscription, { socket, signature: params[0] });
        perSocket.set(socket, mine + 1);
        reply(subscription);
        fresh.push(subscription);
        if (!freshScheduled) {
          freshScheduled = true;
          setImmediate(checkFresh);
        }
        return;
      }
      if (method.endsWith('Unsubscribe')) {
        // Only the connection's own subscription: another connection's id is not this one's to end.
        const target = pending.get(Number(params[0]));
        if (target?.socket === socket) forget(Number(params[0]));
        return reply(true);
      }
      if (method.endsWith('Subscribe')) return reply(nextId++);
      fail(-32601, 'Method not found');
    });
    socket.on('close', () => {
      if (!perSocket.has(socket)) return;
      for (const [id, sub] of pending) if (sub.socket === socket) forget(id);
    });
  };
  return {
    /** Serves PubSub on this HTTP server's upgrades too (the RPC port and the next share the subscriptions and their caps). */
    attach(server) {
      const wss = new WebSocketServer({
        server,
        maxPayload: 64 * 1024,
        verifyClient: (info: { origin?: string }, done: (ok: boolean, code?: number, message?: string) => void) =>
          done(loopbackOrigin(info.origin), 403, 'Origin not allowed'),
      });
      wss.on('connection', onConnection);
      servers.push(wss);
    },
    close() {
      clearInterval(timer);
      for (const wss of servers) {
        for (const client of wss.clients) client.terminate();
        wss.close();
      }
    },
  };
}
