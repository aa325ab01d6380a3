import { lookup as dnsLookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { buildConnector } from 'undici';
import { forbiddenAddressReason } from './addressPolicy.js';

/** Resolves a host name to every address it has (injected in tests to simulate DNS). */
export type HostLookup = (hostname: string) => Promise<Array<{ address: string; family: number }>>;

export const systemLookup: HostLookup = (hostname) => dnsLookup(hostname, { all: true, verbatim: true });

/**
 * The destination is not a public unicast address (docs/delivery.md). `detail` names the address and
 * what it resolved from; in production only the server log sees it (see httpClient).
 */
export class BlockedDestinationError extends Error {
  readonly code = 'blocked_destination';
  constructor(readonly detail: string) {
    super(detail);
    this.name = 'BlockedDestinationError';
  }
}

/**
 * An undici connector that resolves the host itself, refuses it when any resolved address is not
 * public, and then connects to that very address. Because the socket is opened to the checked IP
 * (TLS still verifies the certificate against the original host name via SNI), a DNS answer that
 * changes between the check and the connect cannot redirect us: there is no rebinding window.
 */
export function createGuardedConnector(options: {
  lookup: HostLookup;
  connectTimeoutMs: number;
  /** Why an address is refused; tests may swap it to reach a local receiver through this connector. */
  policy?: (address: string) => string | undefined;
  /** Trusted CA certificates, replacing Node's defaults (a private CA; tests use a self-signed one). */
  ca?: string | Buffer;
}): buildConnector.connector {
  const policy = options.policy ?? forbiddenAddressReason;
  const base = buildConnector({ timeout: options.connectTimeoutMs, ...(options.ca === undefined ? {} : { ca: options.ca }) });
  return function guardedConnect(opts, callback) {
    const hostname = opts.hostname.replace(/^\[(.*)\]$/, '$1');
    const resolve = isIP(hostname) !== 0 ? Promise.resolve([{ address: hostname, family: isIP(hostname) }]) : options.lookup(hostname);
    resolve.then(
      (addresses) => {
        if (addresses.length === 0) return callback(new BlockedDestinationError(`${hostname} did not resolve`), null);
        for (const { address } of addresses) {
          const reason = policy(address);
          if (reason !== undefined) {
            const via = address === hostname ? '' : ` (resolved from ${hostname})`;
            return callback(new BlockedDestinationError(`destination ${address}${via} is ${reason}`), null);
          }
        }
        const target = addresses[0]!.address;
        // `host` keeps the original name so undici still sends it as SNI and TLS verifies it.
        base({ ...opts, hostname: target }, callback);
      },
      (error: unknown) => callback(error instanceof Error ? error : new Error(String(error)), null),
    );
  };
}
