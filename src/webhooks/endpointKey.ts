/**
 * The key a circuit breaker is kept under (docs/delivery.md): scheme, host, port and path of the webhook
 * URL (`https://hooks.example.com:443/launch`), without query or fragment. Two customers on one
 * shared host (a relay such as a Zapier-style hook service) have different paths and therefore
 * breakers that do not stall each other.
 */
export function endpointKey(url: string): string {
  const u = new URL(url);
  const port = u.port !== '' ? u.port : u.protocol === 'https:' ? '443' : u.protocol === 'http:' ? '80' : '';
  return `${u.protocol}//${u.hostname}:${port}${u.pathname}`;
}

/** The host name health aggregates an endpoint under: `host[:port]`, the default port left out. */
export function hostOfEndpoint(key: string): string {
  try {
    return new URL(key).host;
  } catch {
    return key;
  }
}

/** The endpoint host a breaker is keyed by: `host[:port]` of the URL. */
export function endpointHost(url: string): string {
  return new URL(url).host.toLowerCase();
}
