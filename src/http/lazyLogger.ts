import type { Bindings, Logger } from 'pino';

/**
 * `parent.child(bindings)`, created on first use. Each request gets a child logger bound to its
 * request id (and key), but most requests never log through it; pino's `child()` (bindings
 * serialized, level methods set up) was ≈6 % of the CPU of a cheap route under load, paid per request.
 */
export function lazyChild(parent: Logger, bindings: Bindings): Logger {
  let child: Logger | undefined;
  const real = () => (child ??= parent.child(bindings));
  return new Proxy({} as Logger, {
    get(_target, property) {
      const logger = real();
      const value: unknown = Reflect.get(logger, property, logger);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(logger) : value;
    },
    set(_target, property, value) {
      return Reflect.set(real(), property, value);
    },
    has(_target, property) {
      return Reflect.has(real(), property);
    },
  });
}
