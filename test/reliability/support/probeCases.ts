/** Malformed requests for the bad-input probe: every route, every way a client gets it wrong. */
export interface ProbeCase {
  label: string;
  method: string;
  path: string;
  headers?: Record<string, string>;
  body?: string | Buffer;
  /** Which key to send; `none` sends no credentials (headers may still carry some). */
  auth: 'writer' | 'admin' | 'none';
}

/** Every route of docs/api.md with its allowed methods; `:id` is replaced by bad ids (and by a real id of its `idOf` kind). */
export const ROUTES: Array<{ path: string; methods: string[]; idOf?: 'endpoint' }> = [
  { path: '/api/health', methods: ['GET', 'HEAD'] },
  { path: '/api/openapi', methods: ['GET'] },
  { path: '/api/webhooks/test', methods: ['POST'] },
  { path: '/api/launches', methods: ['GET', 'POST'] },
  { path: '/api/launches/:id', methods: ['GET', 'PATCH'] },
  { path: '/api/launches/:id/events', methods: ['GET'] },
  { path: '/api/launches/:id/deliveries', methods: ['GET'] },
  { path: '/api/deliveries/:id/redeliver', methods: ['POST'] },
  { path: '/api/dead-letters', methods: ['GET'] },
  { path: '/api/dead-letters/:id', methods: ['GET'] },
  { path: '/api/dead-letters/:id/retry', methods: ['POST'] },
  { path: '/api/dead-letters/:id/resolve', methods: ['POST'] },
  { path: '/api/webhook-endpoints', methods: ['GET', 'POST'] },
  { path: '/api/webhook-endpoints/:id', methods: ['GET', 'PATCH', 'DELETE'], idOf: 'endpoint' },
  { path: '/api/webhook-endpoints/:id/rotate-secret', methods: ['POST'], idOf: 'endpoint' },
  { path: '/api/webhook-endpoints/:id/recover', methods: ['POST'], idOf: 'endpoint' },
  { path: '/api/webhook-endpoints/:id/stats', methods: ['GET'], idOf: 'endpoint' },
];

const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'];

export const BAD_IDS = ['does-not-exist', '%00', '..%2F..%2Fetc%2Fpasswd', 'x'.repeat(5000), '%F0%9F%98%80', "'%20OR%201%3D1%20--", '%ZZ', '%', 'lch_%E2%80%AE', '-1', '0', 'null', 'undefined'];

const nested = (depth: number, open: string, close: string) => open.repeat(depth) + close.repeat(depth);

/** Bodies that are not a usable JSON object. */
export const BAD_BODIES: Array<[string, string | Buffer]> = [
  ['truncated json', '{"name": "x"'],
  ['trailing garbage', '{"a":1} xyz'],
  ['bare string', '"launch"'],
  ['number', '12345'],
  ['null', 'null'],
  ['true', 'true'],
  ['array', '[{"name":"x"}]'],
  ['empty object', '{}'],
  ['single quotes', "{'name': 'x'}"],
  ['NaN literal', '{"totalSupply": NaN}'],
  ['bom prefix', '\uFEFF{"name":"x"}'],
  ['invalid utf-8', Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xc3, 0x28, 0xff, 0x22, 0x7d])],
  ['nul bytes', '{"name":"\u0000\u0000"}'],
  ['lone surrogate', '{"name":"\\ud800"}'],
  ['deep arrays', nested(20_000, '[', ']')],
  ['deep objects', '{"a":'.repeat(20_000) + '1' + '}'.repeat(20_000)],
  ['huge string field', JSON.stringify({ name: 'x'.repeat(60_000) })],
  ['huge body', JSON.stringify({ pad: 'y'.repeat(2_000_000) })],
  ['many keys', JSON.stringify(Object.fromEntries(Array.from({ length: 3000 }, (_, i) => [`k${i}`, i])))],
  ['proto pollution', '{"__proto__": {"admin": true}, "constructor": {"prototype": {"x": 1}}}'],
];

export const BAD_CONTENT_TYPES = ['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/xml', 'application/json; charset=utf-16', 'application/jsonx', '', '*/*'];

/** Values of every wrong type a field can get. */
export const WRONG_VALUES: unknown[] = [null, 0, -1, 1.5, 1e308, -1e308, '', ' ', 'x'.repeat(5000), '💥🚀', '\u202Eevil', [], [1, 2], {}, { a: 1 }, true, false, '1'.repeat(400), '-5', '0x10', '1e9', 'NaN', '../../etc/passwd'];

/** Every launch field path (docs/api.md request), nested ones dotted. */
export const LAUNCH_FIELDS = [
  'name', 'ticker', 'totalSupply', 'decimals', 'uri', 'tokenStandard', 'creator', 'allocations', 'allocations.creator', 'allocations.vesting',
  'allocations.treasury', 'allocations.pool', 'vesting', 'vesting.beneficiary', 'vesting.cliffSeconds', 'vesting.periodSeconds', 'vesting.periods',
  'dao', 'dao.name', 'dao.votingPeriodSeconds', 'dao.quorumPercent', 'pool', 'pool.quoteMint', 'pool.quoteAmount', 'revokeMintAuthority', 'webhookUrl', 'webhookSecret',
];

export const BAD_QUERIES = ['limit=-1', 'limit=0', 'limit=201', 'limit=abc', 'limit=1.5', 'limit=1e3', 'limit=', 'limit=99999999999999999999999', 'offset=-1', 'offset=abc', 'offset=1e400',
  'limit=1&limit=2', 'status=bogus', 'status=', 'kind=bogus', 'kind=launch&status=weird', 'status[]=queued', '%ZZ=1', 'limit=%00', 'offset=' + '9'.repeat(500)];

export const BAD_AUTH: Array<Record<string, string>> = [
  {}, { authorization: 'Bearer' }, { authorization: 'Bearer ' }, { authorization: 'Basic dXNlcjpwYXNz' }, { authorization: 'Bearer sk_not_a_real_key' },
  { authorization: `Bearer ${'a'.repeat(10_000)}` }, { authorization: 'bearer' }, { authorization: 'Token sk_x' }, { 'x-api-key': '' }, { 'x-api-key': 'sk_' },
  { 'x-api-key': 'garbage' }, { authorization: 'Bearer sk_a', 'x-api-key': 'sk_b' }, { authorization: 'Bearer sk_a, Bearer sk_b' }, { authorization: 'Bearer sk_\u00e9\u00ff' },
];

/** Builds the full case list for the given concrete ids (a real launch, to reach deeper code). */
export function probeCases(existingLaunchId: string, existingEndpointId = 'we_none'): ProbeCase[] {
  const cases: ProbeCase[] = [];
  for (const route of ROUTES) {
    const path = route.path.replace(':id', route.idOf === 'endpoint' ? existingEndpointId : existingLaunchId);
    for (const method of METHODS.filter((m) => !route.methods.includes(m))) cases.push({ label: `wrong method ${method} ${route.path}`, method, path, auth: 'admin', body: method === 'GET' ? undefined : '{}', headers: { 'content-type': 'application/json' } });
    if (route.path.includes(':id')) for (const id of BAD_IDS) for (const method of route.methods) cases.push({ label: `bad id ${id.slice(0, 30)} ${method} ${route.path}`, method, path: route.path.replace(':id', id), auth: 'admin' });
    for (const method of route.methods) for (const headers of BAD_AUTH) cases.push({ label: `bad auth ${JSON.stringify(headers).slice(0, 60)} ${method} ${route.path}`, method, path, auth: 'none', headers });
    for (const method of route.methods.filter((m) => m === 'POST' || m === 'PATCH')) {
      for (const [name, body] of BAD_BODIES) cases.push({ label: `bad body (${name}) ${route.path}`, method, path, auth: 'admin', body, headers: { 'content-type': 'application/json' } });
      for (const type of BAD_CONTENT_TYPES) cases.push({ label: `content type "${type}" ${route.path}`, method, path, auth: 'admin', body: '{"a":1}', headers: type ? { 'content-type': type } : {} });
    }
    if (route.methods.includes('GET') && !route.path.includes(':id/')) for (const q of BAD_QUERIES) cases.push({ label: `query ${q.slice(0, 40)} ${route.path}`, method: 'GET', path: `${path}?${q}`, auth: 'admin' });
  }
  return cases;
}
