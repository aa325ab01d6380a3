import type { Logger } from '../../lib/logger.js';
import type { ChainBackend } from '../backend.js';
import type { EmbeddedBackend } from './backend.js';
import { startChainRpcServer, type ChainRpcServer } from './rpcServer.js';

/**
 * Serves the embedded chain as a local cluster when configured (CHAIN_RPC_HOST:CHAIN_RPC_PORT,
 * never in production, never in RPC mode). Resolves with the server, or undefined when not served.
 */
export async function startLocalCluster(
  settings: { host: string; port: number } | undefined,
  chain: ChainBackend,
  logger: Logger,
): Promise<ChainRpcServer | undefined> {
  if (settings === undefined || chain.kind !== 'embedded') return undefined;
  try {
    return await startChainRpcServer({ chain: chain as EmbeddedBackend, host: settings.host, port: settings.port, logger });
  } catch (error) {
    const code = (error as { code?: string }).code;
    throw new Error(
      code === 'EADDRINUSE'
        ? `CHAIN_RPC_PORT ${settings.port} is in use (another local validator or service?); set CHAIN_RPC_PORT to a free port, 0 for any, or off`
        : `cannot serve the embedded chain on ${settings.host}:${settings.port}: ${(error as Error).message}`,
      { cause: error },
    );
  }
}
