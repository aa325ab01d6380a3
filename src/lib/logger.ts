import { pino, type Logger } from 'pino';

export type { Logger };

/** Paths never written to logs. */
export const redactPaths = [
  'req.headers.authorization',
  'req.headers["x-api-key"]',
  'headers.authorization',
  'headers["x-api-key"]',
  'authorization',
  'apiKey',
  'key',
  'secret',
  'secretKey',
  'webhookSecret',
  '*.webhookSecret',
  '*.secret',
  '*.apiKey',
  'body.webhookSecret',
];

/** JSON logs in production; pretty logs in a terminal. */
export function createLogger(options: { level: string; pretty: boolean }): Logger {
  return pino({
    level: options.level,
    redact: { paths: redactPaths, censor: '[redacted]' },
    ...(options.pretty ? { transport: { target: 'pino-pretty', options: { colorize: true, translateTime: 'SYS:HH:MM:ss.l', singleLine: true, ignore: 'pid,hostname' } } } : {}),
  });
}

/** A logger that writes nothing, for tests. */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
