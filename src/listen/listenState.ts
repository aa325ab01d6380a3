import { createHash } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { generateSecret } from '../../packages/webhooks/src/index.js';

/**
 * What `npm run listen` keeps between runs (README, "Forward events to your machine"): one local
 * signing secret per device or data directory, so a receiver's configuration survives a restart,
 * and per stream (service, key, filter, local URL) the id of the last event it forwarded, so a
 * restart resumes after it. One JSON file, mode 0600 like the service's own `secret.key`.
 */
export interface ListenStateFile {
  secret: string;
  /** Stream key ({@link streamKey}) → the last event id forwarded (or the stream's starting place). */
  cursors: Record<string, string>;
}

export const LISTEN_STATE_FILE = 'listen.json';

/**
 * Where the state lives: `DATA_DIR/listen.json` when DATA_DIR is set, or when the service is the
 * local development one (no LAUNCH_SERVICE_URL) and `./data` exists; otherwise a per-user file
 * (`$XDG_CONFIG_HOME/launch-service/listen.json`, default `~/.config/...`), for a remote service.
 */
export function listenStatePath(env: NodeJS.ProcessEnv, cwd = process.cwd()): string {
  if (env.DATA_DIR) return resolve(cwd, env.DATA_DIR, LISTEN_STATE_FILE);
  const localData = resolve(cwd, 'data');
  if (!env.LAUNCH_SERVICE_URL && existsSync(localData)) return join(localData, LISTEN_STATE_FILE);
  const config = env.XDG_CONFIG_HOME || join(homedir(), '.config');
  return join(config, 'launch-service', LISTEN_STATE_FILE);
}

/**
 * Names one stream's cursor: the service, a hash of the API key (never the key: the file must not
 * hold it in recoverable form), the filter and the local URL, so two listens side by side or a
 * second key keep their own places.
 */
export function streamKey(input: { serviceUrl: string; apiKey: string; events: string | undefined; forwardTo: string }): string {
  const keyHash = createHash('sha256').update(input.apiKey).digest('hex').slice(0, 16);
  return `${new URL(input.serviceUrl).origin} key:${keyHash} events:${input.events ?? '*'} to:${input.forwardTo}`;
}

/** Reads the state file, or undefined when there is none; a file that is not ours is an error, not overwritten. */
export function readListenState(path: string): ListenStateFile | undefined {
  if (!existsSync(path)) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new Error(`${path} is not a listen state file (${error instanceof Error ? error.message : String(error)}); move it away to start afresh`, { cause: error });
  }
  const state = parsed as Partial<ListenStateFile>;
  if (typeof state.secret !== 'string' || typeof state.cursors !== 'object' || state.cursors === null) throw new Error(`${path} is not a listen state file (no secret); move it away to start afresh`);
  return { secret: state.secret, cursors: { ...state.cursors } };
}

/** Writes the whole file atomically (temporary file, then rename), mode 0600. */
export function writeListenState(path: string, state: ListenStateFile): void {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  const tmp = `${path}.${process.pid}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(state, null, 2)}\n`, { mode: 0o600 });
  chmodSync(tmp, 0o600);
  renameSync(tmp, path);
}

/** The device's secret: the stored one, or a new one stored now (`created` says which). */
export function loadOrCreateSecret(path: string): { secret: string; created: boolean } {
  const state = readListenState(path);
  if (state) return { secret: state.secret, created: false };
  const secret = generateSecret();
  writeListenState(path, { secret, cursors: {} });
  return { secret, created: true };
}

/** This stream's last forwarded event id, if any. */
export function readCursor(path: string, key: string): string | undefined {
  return readListenState(path)?.cursors[key];
}

/**
 * Stores this stream's place. Reads the file again first, so another listen's cursor written
 * meanwhile is kept.
 */
export function saveCursor(path: string, key: string, eventId: string | undefined): void {
  const state = readListenState(path) ?? { secret: generateSecret(), cursors: {} };
  if (eventId === undefined) delete state.cursors[key];
  else state.cursors[key] = eventId;
  writeListenState(path, state);
}
