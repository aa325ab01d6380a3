import { subscribe } from 'node:diagnostics_channel';
import type { Dispatcher } from 'undici';

/** Passed as a request's `opaque`: called when undici puts the request on a socket. */
export interface WriteHook {
  onWrite(): void;
  /** Set once written: true when the socket had carried an earlier request (a pooled keep-alive socket). */
  reusedSocket?: boolean;
}

// undici publishes `sendHeaders` (with the socket) synchronously right after `onRequestStart`, so
// the hook that has just been told it is written is the one this socket belongs to.
let writing: WriteHook | undefined;
const usedSockets = new WeakSet<object>();
subscribe('undici:client:sendHeaders', (message) => {
  const { socket } = message as { socket: object };
  const hook = writing;
  writing = undefined;
  if (hook) hook.reusedSocket = usedSockets.has(socket);
  usedSockets.add(socket);
});

function isWriteHook(value: unknown): value is WriteHook {
  return typeof value === 'object' && value !== null && typeof (value as WriteHook).onWrite === 'function';
}

type AnyHandler = Record<string, unknown>;

/**
 * An undici interceptor that tells a request when it is actually written. undici calls a handler's
 * `onRequestStart` (`onConnect` in the legacy handler API) from its socket writer immediately
 * before the request's bytes go out, so that is the
 * instant a receiver's time starts (not when we called `request()`, which may be long before on a
 * busy loop or with the request queued behind others).
 */
export const notifyOnWrite: Dispatcher.DispatcherComposeInterceptor = (dispatch) => (opts, handler) => {
  const hook = (opts as { opaque?: unknown }).opaque;
  if (!isWriteHook(hook)) return dispatch(opts, handler);
  const inner = handler as unknown as AnyHandler;
  // Delegate every method to the original handler (bound, so its own state stays on itself).
  const wrapped: AnyHandler = {};
  for (let proto: object | null = inner; proto && proto !== Object.prototype; proto = Object.getPrototypeOf(proto) as object | null) {
    for (const name of Object.getOwnPropertyNames(proto)) {
      const value = inner[name];
      if (name !== 'constructor' && typeof value === 'function' && !(name in wrapped)) wrapped[name] = (value as (...a: unknown[]) => unknown).bind(inner);
    }
  }
  const start = typeof inner.onRequestStart === 'function' ? 'onRequestStart' : 'onConnect';
  const original = wrapped[start] as ((...args: unknown[]) => unknown) | undefined;
  wrapped[start] = (...args: unknown[]) => {
    writing = hook;
    queueMicrotask(() => {
      if (writing === hook) writing = undefined; // the request was aborted before its headers went out
    });
    hook.onWrite();
    return original?.(...args);
  };
  return dispatch(opts, wrapped as unknown as Dispatcher.DispatchHandler);
};
