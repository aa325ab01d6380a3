import type { MiddlewareHandler } from 'hono';
import { readBoundedBody } from '../../lib/boundedBody.js';
import { jsonDepth, MAX_JSON_DEPTH } from '../../lib/jsonDepth.js';
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
      const read = await readBoundedBody(c.req.raw.body, options.limitBytes);
      if ('refused' in read) throw tooLarge(options.limitBytes);
      const bytes = read.bytes;
      const size = bytes.byteLength;
      // A body-less POST (retry, resolve) needs no content type; any body must be JSON.
      const type = c.req.header('content-type');
      if (size > 0 && (!type || !/^application\/(?:[\w.+-]+\+)?json\s*(;|$)/i.test(type))) {
        throw new ApiError(415, 'unsupported_media_type', 'Request bodies must be application/json', { contentType: type ?? null });
      }
      // JSON is UTF-8 (RFC 8259); a body declared in another charset would be decoded wrongly.
      const charset = type === undefined ? undefined : charsetOf(type);
      if (size > 0 && charset !== undefined && !/^utf-?8$/i.test(charset)) {
        throw new ApiError(415, 'unsupported_media_type', `Request bodies must be UTF-8 JSON; charset "${charset.slice(0, 40)}" is not accepted`, { charset: charset.slice(0, 40) });
      }
      // Every body, whichever route reads it: valid UTF-8 and bounded nesting.
      if (size > 0) checkJsonText(bytes);
      // The stream is consumed; hand handlers a buffered copy of the same bytes.
      c.req.raw = new Request(c.req.raw, { body: bytes });
    }
    return next();
  };
}

function tooLarge(limit: number): ApiError {
  return new ApiError(413, 'payload_too_large', `Request body exceeds ${limit} bytes`, { limitBytes: limit });
}

/** The `charset` parameter of a Content-Type, unquoted; undefined when absent. */
function charsetOf(contentType: string): string | undefined {
  const match = /;\s*charset\s*=\s*("?)([^";\s]*)\1/i.exec(contentType);
  return match ? match[2] : undefined;
}

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });

/** Decodes a body as strict UTF-8 and bounds its nesting; 400 otherwise. */
function checkJsonText(bytes: Uint8Array): string {
  let text: string;
  try {
    text = utf8.decode(bytes);
  } catch {
    throw new ApiError(400, 'invalid_request', 'Request body is not valid UTF-8');
  }
  if (jsonDepth(text) > MAX_JSON_DEPTH) {
    throw new ApiError(400, 'invalid_request', `Request body is nested more than ${MAX_JSON_DEPTH} levels deep`, { maxDepth: MAX_JSON_DEPTH });
  }
  return text;
}

/**
 * Parses the JSON body of a request, answering 400 `invalid_request` when it is not valid UTF-8,
 * not valid JSON, or nested deeper than {@link MAX_JSON_DEPTH} (measured before parsing, so no
 * later recursive walk over the value can overflow the stack).
 */
export async function readJson(c: { req: { arrayBuffer(): Promise<ArrayBuffer> } }): Promise<unknown> {
  const text = checkJsonText(new Uint8Array(await c.req.arrayBuffer()));
  if (text.trim() === '') throw new ApiError(400, 'invalid_request', 'Request body is empty; a JSON object is expected');
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new ApiError(400, 'invalid_request', 'Request body is not valid JSON');
  }
}
