import { BlockedDestinationError } from './guardedConnector.js';

/* How a failed webhook attempt is named: its error class and a message the customer acts on (docs/delivery.md). */

/** What a refused destination's attempt says when its detail is not revealed (production). */
export const DESTINATION_NOT_ALLOWED = 'destination not allowed';

/** Which deadline ended an attempt: the receiver's (counted from the write), or the backstop before it was written. */
export type Expired = 'answer' | 'send' | undefined;

/** The error class and message of an exchange that got no answer; `logDetail` goes to the server log only. */
export function classify(error: unknown, expired: Expired, timeoutMs: number, revealBlocked: boolean): { errorClass: string; errorMessage: string; logDetail?: string } {
  const err = error as { code?: string; message?: string; name?: string };
  const message = err?.message ?? String(error);
  if (expired === 'send') return { errorClass: 'timeout', errorMessage: inWords(`the request could not be sent within ${seconds(2 * timeoutMs)} (connecting to the receiver, or waiting for a connection to it)`, message) };
  if (expired === 'answer' || err?.name === 'AbortError' || err?.code === 'UND_ERR_HEADERS_TIMEOUT' || err?.code === 'UND_ERR_BODY_TIMEOUT') {
    return { errorClass: 'timeout', errorMessage: inWords(`no complete answer within ${seconds(timeoutMs)} of sending the request`, message) };
  }
  if (/Timeout/.test(err?.code ?? '')) return { errorClass: 'timeout', errorMessage: inWords(`could not connect to the receiver within ${seconds(timeoutMs)}`, message) };
  if (error instanceof BlockedDestinationError) {
    return { errorClass: 'blocked_destination', errorMessage: revealBlocked ? error.detail : DESTINATION_NOT_ALLOWED, logDetail: error.detail };
  }
  const code = err?.code ?? '';
  if (code === 'ECONNREFUSED') return { errorClass: 'connection_refused', errorMessage: inWords('connection refused: is the receiver running and listening on this port?', message) };
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return { errorClass: 'dns_error', errorMessage: inWords("the webhook URL's host name does not resolve", message) };
  if (/TLS|CERT|SSL|SELF_SIGNED|ERR_SSL/.test(code) || /certificate|tls|ssl/i.test(message)) return { errorClass: 'tls_error', errorMessage: inWords(tlsInWords(code, message), message) };
  return { errorClass: 'connection_error', errorMessage: code ? `${code}: ${message}` : message };
}

/** A duration as a customer reads it: `10 s`, `500 ms`. */
function seconds(ms: number): string {
  return ms >= 1000 && ms % 1000 === 0 ? `${ms / 1000} s` : `${ms} ms`;
}

/** A failure said in words a customer acts on, with the raw error kept after it. */
function inWords(words: string, raw: string): string {
  return `${words} (details: ${raw.replace(/\s+/g, ' ').trim()})`;
}

/** What a TLS failure most likely means. */
function tlsInWords(code: string, message: string): string {
  const text = `${code} ${message}`;
  if (/WRONG_VERSION_NUMBER|packet length too long|unknown protocol/i.test(text)) return 'TLS handshake failed — does the endpoint speak https?';
  if (/ALTNAME|does not match/i.test(text)) return "TLS certificate rejected: it is not valid for the webhook URL's host name";
  if (/EXPIRED|NOT_YET_VALID/i.test(code)) return 'TLS certificate rejected: it is expired or not yet valid';
  if (/SELF_SIGNED|UNABLE_TO_VERIFY|UNABLE_TO_GET_ISSUER|CERT_UNTRUSTED/i.test(code)) {
    return 'TLS certificate rejected: it is not signed by a trusted authority (self-signed or an incomplete chain)';
  }
  return 'TLS handshake failed';
}

/** Errors that a pooled keep-alive socket the receiver already closed produces (only meaningful on a reused socket). */
export function staleSocketError(error: unknown): boolean {
  const code = (error as { code?: string })?.code ?? '';
  return code === 'UND_ERR_SOCKET' || code === 'ECONNRESET' || code === 'EPIPE';
}

