import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { PublicKey, type AccountInfo } from '@solana/web3.js';
import { NonRetriableError, TransientError } from '../../../src/lib/retry.js';
import type { EmbeddedBackend } from '../../../src/chain/embedded/backend.js';

/** Faults the double can inject into the next requests. */
/** `lost_response` executes the request, then never answers (the client times out). */
export type Fault = '429' | '503' | 'hang' | 'lost_response' | 'blockhash_not_found';

/** A JSON-RPC endpoint answering the methods web3.js `Connection` uses, from an embedded chain. */
export interface RpcDouble {
  url: string;
  /** Methods requested so far, in order. */
  readonly requests: string[];
  /** The next `count` requests (of `method`, when given) fail with `fault`. */
  inject(fault: Fault, count?: number, method?: string): void;
  close(): Promise<void>;
}

type Handler = (params: unknown[]) => Promise<unknown>;

function encodeAccount(info: AccountInfo<Buffer> | null) {
  if (!info) return null;
  return {
    data: [info.data.toString('base64'), 'base64'],
    executable: info.executable,
    lamports: info.lamports,
    owner: info.owner.toBase58(),
    rentEpoch: 0,
    space: info.data.length,
  };
}

/** Turns the embedded chain's classified failures into the JSON-RPC errors a real node sends. */
function sendError(error: unknown) {
  if (error instanceof TransientError && error.code === 'blockhash_expired') {
    return { code: -32002, message: 'Transaction simulation failed: Blockhash not found', data: { err: 'BlockhashNotFound', logs: [] } };
  }
  if (error instanceof NonRetriableError && error.code === 'insufficient_balance') {
    return { code: -32002, message: 'Transaction simulation failed: Attempt to debit an account but found no record of a prior credit.', data: { logs: [] } };
  }
  const logs = error instanceof Error ? error.message.split('\n') : [];
  return { code: -32002, message: 'Transaction simulation failed: Error processing Instruction 0: custom program error: 0x0', data: { logs } };
}

/** Starts the double on 127.0.0.1 with a random port. */
export async function startRpcDouble(chain: EmbeddedBackend): Promise<RpcDouble> {
  const requests: string[] = [];
  const faults: Array<{ fault: Fault; method: string | undefined }> = [];
  const hanging = new Set<ServerResponse>();
  const slot = async () => chain.getBlockHeight();
  const ctx = async (value: unknown) => ({ context: { slot: await slot() }, value });

  const methods: Record<string, Handler> = {
    getLatestBlockhash: async () => ctx(await chain.getLatestBlockhash()),
    getBlockHeight: () => chain.getBlockHeight(),
    getSlot: slot,
    getEpochInfo: async () => ({ absoluteSlot: await slot(), blockHeight: await slot(), epoch: 0, slotIndex: await slot(), slotsInEpoch: 432000, transactionCount: 0 }),
    getVersion: async () => ({ 'solana-core': '2.2.0', 'feature-set': 0 }),
    getGenesisHash: async () => '11111111111111111111111111111111',
    getMinimumBalanceForRentExemption: (p) => chain.getMinimumBalanceForRentExemption(Number(p[0])),
    getBalance: async (p) => ctx(await chain.getBalance(new PublicKey(String(p[0])))),
    getAccountInfo: async (p) => ctx(encodeAccount(await chain.getAccountInfo(new PublicKey(String(p[0]))))),
    getMultipleAccounts: async (p) =>
      ctx(await Promise.all((p[0] as string[]).map(async (k) => encodeAccount(await chain.getAccountInfo(new PublicKey(k)))))),
    getSignatureStatuses: async (p) =>
      ctx(
        await Promise.all(
          (p[0] as string[]).map(async (sig) => {
            const s = await chain.getSignatureStatus(sig);
            return s && { slot: await slot(), confirmations: null, err: s.err, status: s.err ? { Err: s.err } : { Ok: null }, confirmationStatus: s.status };
          }),
        ),
      ),
    sendTransaction: (p) => chain.sendRawTransaction(Buffer.from(String(p[0]), 'base64')),
  };

  const respond = (res: ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  };

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { id: unknown; method: string; params?: unknown[] };
    requests.push(body.method);
    const index = faults.findIndex((f) => f.method === undefined || f.method === body.method);
    const fault = index >= 0 ? faults.splice(index, 1)[0]?.fault : undefined;
    if (fault === 'hang') return void hanging.add(res);
    if (fault === '429') return respond(res, 429, { jsonrpc: '2.0', id: body.id, error: { code: 429, message: 'Too many requests' } });
    if (fault === '503') return respond(res, 503, { jsonrpc: '2.0', id: body.id, error: { code: -32603, message: 'Service unavailable' } });
    if (fault === 'blockhash_not_found') return respond(res, 200, { jsonrpc: '2.0', id: body.id, error: sendError(new TransientError('x', 'blockhash_expired')) });
    const method = methods[body.method];
    if (!method) return respond(res, 200, { jsonrpc: '2.0', id: body.id, error: { code: -32601, message: `Method not found: ${body.method}` } });
    if (fault === 'lost_response') {
      await method(body.params ?? []).catch(() => undefined);
      return void hanging.add(res);
    }
    try {
      respond(res, 200, { jsonrpc: '2.0', id: body.id, result: await method(body.params ?? []) });
    } catch (error) {
      const rpcError = body.method === 'sendTransaction' ? sendError(error) : { code: -32603, message: String(error) };
      respond(res, 200, { jsonrpc: '2.0', id: body.id, error: rpcError });
    }
  };

  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => respond(res, 500, { error: String(error) }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    inject(fault, count = 1, method) {
      for (let i = 0; i < count; i++) faults.push({ fault, method: fault === 'blockhash_not_found' ? 'sendTransaction' : method });
    },
    async close() {
      for (const res of hanging) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
