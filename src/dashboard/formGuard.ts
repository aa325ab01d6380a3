import type { Context, MiddlewareHandler } from 'hono';
import { readBoundedBody } from '../lib/boundedBody.js';

const FORM_TYPE = /^(application\/x-www-form-urlencoded|multipart\/form-data)\s*(;|$)/i;

/** What the guard answers instead of running the route: a status and a sentence for the page. */
export interface FormRefusal {
  status: 413 | 415;
  message: string;
}

/**
 * Bounds every form post before anything parses it: a declared `Content-Length` over `limitBytes`
 * is refused unread, and the body is read at most `limitBytes` (+1) bytes into memory, so a huge or
 * endless body never takes the process's memory. Only form content types pass. `refuse` renders the
 * answer; the connection is closed after it so the rest of a large body is not read.
 */
export function formBodyGuard(options: { limitBytes: number; refuse(c: Context, refusal: FormRefusal): Response | Promise<Response> }): MiddlewareHandler {
  return async function formBodyGuard(c, next) {
    if (c.req.method !== 'POST') return next();
    const tooLarge = (): FormRefusal => ({ status: 413, message: `The form is larger than ${options.limitBytes} bytes.` });
    const refuse = (refusal: FormRefusal) => {
      c.header('Connection', 'close');
      return options.refuse(c, refusal);
    };
    const declared = c.req.header('content-length');
    if (declared !== undefined && Number(declared) > options.limitBytes) return refuse(tooLarge());
    const body = c.req.raw.body;
    if (!body) return next();
    const type = c.req.header('content-type');
    const notForm = type === undefined || !FORM_TYPE.test(type);
    const read = await readBoundedBody(body, options.limitBytes, notForm);
    if ('refused' in read) {
      return refuse(read.refused === 'too_large' ? tooLarge() : { status: 415, message: 'Dashboard forms must be posted as application/x-www-form-urlencoded or multipart/form-data.' });
    }
    // The stream is consumed; the route parses a buffered copy of the same bytes.
    c.req.raw = new Request(c.req.raw, { body: read.bytes });
    return next();
  };
}
