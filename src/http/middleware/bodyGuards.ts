import type { MiddlewareHandler } from 'hono';
import { ApiError } from '../errors.js';
import type { AppEnv } from '../env.js';

const WITH_BODY = new Set(['POST', 'PUT', 'PATCH']);

/**
 * Refuses bodies over the limit (413) and non-JSON bodies (415) before a handler reads them.
 * Reads the body once, bounded, so a lying Content-Length cannot get past the limit.
 */
export function jsonBodyGuard(options: { limitBytes: number }): MiddlewareHandler<AppEnv> {
  return async function jsonBodyGuard(c, next) {
    if (!WITH_BODY.has(c.req.method)) return next();
    const declared = c.req.header('content-length');
    if (declared !== undefined && Number(declared) > options.limitBytes) throw tooLarge(options.limitBytes);
    if (c.req.raw.body) {
      const reader = c.req.raw.body.getReader();
      const chunks: Uint8Array[] = [];
      let size = 0;
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        size += value.byteLength;
        if (size > options.limitBytes) {
          await reader.cancel().catch(() => undefined);
          throw tooLarge(options.limitBytes);
        }
        chunks.push(value);
      }
      // A body-less POST (retry, resolve) needs no content type; any body must be JSON.
      const type = c.req.header('content-type');
      if (size > 0 && (!type || !/^application\/(?:[\w.+-]+\+)?json\s*(;|$)/i.test(type))) {
        throw new ApiError(415, 'unsupported_media_type', 'Request bodies must be application/json', { contentType: type ?? null });
      }
      // The stream is consumed; hand handlers a buffered copy of the same bytes.
      c.req.raw = new Request(c.req.raw, { body: Buffer.concat(chunks) });
    }
    return next();
  };
}

function tooLarge(limit: number): ApiError {
  return new ApiError(413, 'payload_too_large', `Request body exceeds ${limit} bytes`, { limitBytes: limit });
}

/** Parses the JSON body of a request, answering 400 `invalid_request` when it is not valid JSON. */
export async function readJson(c: { req: { text(): Promise<string> } }): Promise<unknown> {
  const text = await c.req.text();
  if (text.trim() === '') throw new ApiError(400, 'invalid_request', 'Request body is empty; a JSON object is expected');
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new ApiError(400, 'invalid_request', 'Request body is not valid JSON');
  }
}
