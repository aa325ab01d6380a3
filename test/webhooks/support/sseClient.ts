import { readSse, type SseMessage } from '../../../src/listen/sse.js';

export interface OpenStream {
  status: number;
  /** The response body when the answer is not a stream. */
  json?: unknown;
  /** The next `count` events (comments skipped), or throws after `timeoutMs`. */
  take(count: number, timeoutMs?: number): Promise<Array<{ id: string; data: string }>>;
  /** The next comment line. */
  comment(timeoutMs?: number): Promise<string>;
  /** Every event that arrives within `ms` (to show that nothing more comes). */
  drain(ms: number): Promise<Array<{ id: string; data: string }>>;
  close(): void;
}

/** `GET /api/events/stream` over real HTTP, read as Server-Sent Events. */
export async function openEventStream(baseUrl: string, key: string, options: { lastEventId?: string; events?: string } = {}): Promise<OpenStream> {
  const abort = new AbortController();
  const url = new URL('/api/events/stream', baseUrl);
  if (options.events !== undefined) url.searchParams.set('events', options.events);
  const headers: Record<string, string> = { authorization: `Bearer ${key}`, accept: 'text/event-stream' };
  if (options.lastEventId !== undefined) headers['last-event-id'] = options.lastEventId;
  const res = await fetch(url, { headers, signal: abort.signal });
  if (res.status !== 200 || !res.body) {
    return { status: res.status, json: await res.json(), take: () => Promise.reject(new Error('no stream')), comment: () => Promise.reject(new Error('no stream')), drain: async () => [], close: () => abort.abort() };
  }
  const messages = readSse(res.body);
  let pending: Promise<IteratorResult<SseMessage>> | undefined;
  const nextMessage = async (timeoutMs: number): Promise<SseMessage | undefined> => {
    pending ??= messages.next();
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), timeoutMs)));
    const got = await Promise.race([pending, timeout]);
    clearTimeout(timer);
    if (got === 'timeout') return undefined;
    pending = undefined;
    if (got.done) throw new Error('stream ended');
    return got.value;
  };
  return {
    status: 200,
    async take(count, timeoutMs = 20_000) {
      const out: Array<{ id: string; data: string }> = [];
      const deadline = Date.now() + timeoutMs;
      while (out.length < count) {
        const message = await nextMessage(Math.max(1, deadline - Date.now()));
        if (message === undefined) throw new Error(`timed out with ${out.length} of ${count} events`);
        if (message.kind === 'event') out.push({ id: message.id ?? '', data: message.data });
      }
      return out;
    },
    async comment(timeoutMs = 5_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const message = await nextMessage(Math.max(1, deadline - Date.now()));
        if (message === undefined) throw new Error('timed out waiting for a comment');
        if (message.kind === 'comment') return message.text;
      }
    },
    async drain(ms) {
      const out: Array<{ id: string; data: string }> = [];
      const deadline = Date.now() + ms;
      while (Date.now() < deadline) {
        const message = await nextMessage(Math.max(1, deadline - Date.now()));
        if (message?.kind === 'event') out.push({ id: message.id ?? '', data: message.data });
      }
      return out;
    },
    close: () => abort.abort(),
  };
}
