/**
 * `npm start` up to an open port (src/app/main.ts): the config read, the service built, the port
 * bound. A start the operator misconfigured fails here with one line naming the variable to change
 * and no stack trace ({@link StartupFailure}); anything else keeps its stack.
 */
import type { ServerType } from '@hono/node-server';
import { ProgramFileError } from '../chain/embedded/programs.js';
import { ConfigError, loadConfig, type Config } from '../config/config.js';
import { DatabaseLockedError } from '../db/writerLock.js';
import { systemClock } from '../lib/clock.js';
import { createLogger, type Logger } from '../lib/logger.js';
import { NonRetriableError } from '../lib/retry.js';
import { serveService } from './serve.js';
import { createService, type Service } from './service.js';

/** A start that cannot succeed as configured: `line` is what the process prints on stderr before it exits 1. */
export class StartupFailure extends Error {
  constructor(
    readonly line: string,
    options?: { cause?: unknown },
  ) {
    super(line, options);
    this.name = 'StartupFailure';
  }
}

/** The service built and listening. */
export interface Started {
  config: Config;
  logger: Logger;
  service: Service;
  server: ServerType;
  port: number;
}

/** Reads the config from `env`, builds the service and binds its port; nothing is left running when it throws. */
export async function startService(env: Record<string, string | undefined> = process.env): Promise<Started> {
  let config: Config;
  try {
    config = loadConfig(env);
  } catch (error) {
    if (error instanceof ConfigError) throw new StartupFailure(error.message, { cause: error });
    throw error;
  }
  const logger = createLogger({ level: config.logLevel, pretty: config.logPretty });
  let service: Service;
  try {
    service = await createService(config, { logger, clock: systemClock });
  } catch (error) {
    throw operatorMistake(error) ?? error;
  }
  try {
    const { server, port } = await serveService(service, { port: config.port, hostname: config.host, limits: config.http });
    return { config, logger, service, server, port };
  } catch (error) {
    await service.stop().catch(() => undefined);
    const reason = bindFailure(error, config.port, config.host);
    throw reason === undefined ? error : new StartupFailure(reason, { cause: error });
  }
}

/**
 * A failure that is a mistake of the operator's, told in its own words: a config error, a program
 * file, a database another process holds, a setting that cannot be used (a payer keypair file that
 * cannot be read). Undefined for anything else.
 */
export function operatorMistake(error: unknown): StartupFailure | undefined {
  if (error instanceof StartupFailure) return error;
  const badSetting = error instanceof NonRetriableError && error.code === 'invalid_configuration';
  if (error instanceof ConfigError || error instanceof ProgramFileError || error instanceof DatabaseLockedError || badSetting) {
    return new StartupFailure(`launch service failed to start: ${error.message}`, { cause: error });
  }
  return undefined;
}

/** A one-line explanation of a failed bind that names the variable to change; undefined for other errors. */
function bindFailure(error: unknown, port: number, host: string): string | undefined {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  if (code === 'EADDRINUSE') return `Port ${port} on ${host} is already in use: stop the process using it or set PORT to a free port.`;
  if (code === 'EACCES') return `Port ${port} needs privileges this process does not have: set PORT to a port above 1023.`;
  if (code === 'EADDRNOTAVAIL') return `HOST=${host} is not an address of this machine: set HOST to one of its addresses (127.0.0.1 for local use).`;
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN' || code === 'EAI_NONAME') return `HOST=${host} cannot be resolved to an address: set HOST to an address of this machine (127.0.0.1 for local use) or a name that resolves to one.`;
  return undefined;
}
