import { readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from '../../lib/logger.js';
import type { ChainBackend } from '../backend.js';
import type { EmbeddedBackend } from './backend.js';
import { startChainRpcServer, type ChainRpcServer } from './rpcServer.js';

/**
 * Serves the embedded chain as a local cluster when configured (CHAIN_RPC_HOST:CHAIN_RPC_PORT,
 * never in production, never in RPC mode). Resolves with the server, or undefined when not served.
 * When the port was not chosen (`fallback`) and the default is taken (another validator, a second
 * service), it warns and serves on a free port instead; an explicit CHAIN_RPC_PORT that is taken fails.
 */
export async function startLocalCluster(
  settings: { host: string; port: number; fallback?: boolean } | undefined,
  chain: ChainBackend,
  logger: Logger,
): Promise<ChainRpcServer | undefined> {
  if (settings === undefined || chain.kind !== 'embedded') return undefined;
  const serve = (port: number) => startChainRpcServer({ chain: chain as EmbeddedBackend, host: settings.host, port, logger });
  try {
    return await serve(settings.port);
  } catch (error) {
    const code = (error as { code?: string }).code;
    if (code === 'EADDRINUSE' && settings.fallback === true && settings.port !== 0) {
      const server = await serve(0);
      logger.warn({ taken: settings.port, url: server.url }, `port ${settings.port} is taken: the local cluster serves on ${server.url} instead (CHAIN_RPC_PORT chooses one)`);
      return server;
    }
    throw new Error(
      code === 'EADDRINUSE'
        ? `CHAIN_RPC_PORT ${settings.port} is in use (another local validator or service?); set CHAIN_RPC_PORT to a free port, 0 for any, or off`
        : `cannot serve the embedded chain on ${settings.host}:${settings.port}: ${(error as Error).message}`,
      { cause: error },
    );
  }
}

/**
 * Where a running development service can be reached, written to `DATA_DIR/local.json` once
 * everything is bound and removed at a clean stop, so the command-line tools (`npm run holder`,
 * `npm run listen`) find a local cluster that had to move off 8899 without being told.
 */
export interface LocalEndpoints {
  serviceUrl: string;
  /** Absent when the embedded chain is not served (CHAIN_RPC_PORT=off, RPC mode). */
  rpcUrl?: string;
  wsUrl?: string;
  pid: number;
}

const LOCAL_ENDPOINTS_FILE = 'local.json';

export function writeLocalEndpoints(dataDir: string, endpoints: LocalEndpoints): void {
  const path = join(dataDir, LOCAL_ENDPOINTS_FILE);
  writeFileSync(`${path}.tmp`, `${JSON.stringify(endpoints, null, 2)}\n`);
  renameSync(`${path}.tmp`, path);
}

/** Removes the file if it is still this process's (a newer service may have written its own). */
export function removeLocalEndpoints(dataDir: string): void {
  if (readLocalEndpoints(dataDir)?.pid === process.pid) rmSync(join(dataDir, LOCAL_ENDPOINTS_FILE), { force: true });
}

/** The endpoints a running service wrote, or undefined when there is none (or its process is gone). */
export function readLocalEndpoints(dataDir: string): LocalEndpoints | undefined {
  let parsed: Partial<LocalEndpoints>;
  try {
    parsed = JSON.parse(readFileSync(join(dataDir, LOCAL_ENDPOINTS_FILE), 'utf8')) as Partial<LocalEndpoints>;
  } catch {
    return undefined;
  }
  if (typeof parsed.serviceUrl !== 'string' || typeof parsed.pid !== 'number' || !processAlive(parsed.pid)) return undefined;
  return parsed as LocalEndpoints;
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
