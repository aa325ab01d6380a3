/**
 * Whether a browser `Origin` may use the local cluster (docs/chain.md): none (command-line tools,
 * scripts, servers send none) or a page served from this machine (`localhost`, `127.0.0.0/8`,
 * `[::1]`, any port). Any other origin, `null` (sandboxed frames, files) included, is a page the
 * developer merely opened: it may not airdrop, send or flood through the cluster.
 */
export function loopbackOrigin(origin: string | undefined): boolean {
  if (origin === undefined) return true;
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    return false;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return false;
  const host = url.hostname;
  return host === 'localhost' || host === '[::1]' || /^127(\.\d{1,3}){3}$/.test(host);
}
