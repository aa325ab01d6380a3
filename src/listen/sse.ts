/**
 * One Server-Sent Events message, a comment line (`: heartbeat`), or a block that only sets the
 * last event id (`id: …` without data: the stream's starting place).
 */
export type SseMessage =
  | { kind: 'event'; id: string | undefined; event: string | undefined; data: string }
  | { kind: 'comment'; text: string }
  | { kind: 'id'; id: string };

/**
 * Parses a Server-Sent Events body (the WHATWG event-stream format: `field: value` lines, a blank
 * line ends a message, `:` starts a comment) into messages as they arrive.
 */
export async function* readSse(body: ReadableStream<Uint8Array>): AsyncGenerator<SseMessage> {
  const decoder = new TextDecoder();
  let buffer = '';
  let data: string[] = [];
  let id: string | undefined;
  let event: string | undefined;
  let idInBlock = false;
  const reader = body.getReader();
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer += decoder.decode(value, { stream: true });
      let end: number;
      while ((end = buffer.search(/\r\n|\r|\n/)) >= 0) {
        const line = buffer.slice(0, end);
        buffer = buffer.slice(end + (buffer.startsWith('\r\n', end) ? 2 : 1));
        if (line === '') {
          if (data.length > 0) yield { kind: 'event', id, event, data: data.join('\n') };
          else if (idInBlock && id !== undefined) yield { kind: 'id', id };
          idInBlock = false;
          data = [];
          event = undefined;
          continue;
        }
        if (line.startsWith(':')) {
          yield { kind: 'comment', text: line.slice(1).trim() };
          continue;
        }
        const colon = line.indexOf(':');
        const field = colon < 0 ? line : line.slice(0, colon);
        const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
        if (field === 'data') data.push(value);
        else if (field === 'id') {
          id = value;
          idInBlock = true;
        }
        else if (field === 'event') event = value;
      }
    }
  } finally {
    reader.releaseLock();
    await body.cancel().catch(() => undefined);
  }
}
