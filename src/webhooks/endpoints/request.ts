import { InvalidInputError } from '../../lib/errors.js';
import { destinationProblem } from '../addressPolicy.js';
import { filterEntryProblem, SUBSCRIBABLE_KINDS } from './filters.js';
import { ORDERINGS, type Ordering } from '../sql/ordering.js';

type FieldError = { field: string; message: string };

export type SignatureSchemeName = 'service' | 'standard';

export interface EndpointCreateInput {
  url: string;
  events: string[];
  description: string | null;
  signatureScheme: SignatureSchemeName;
  /** At most this many deliveries a second; null or absent: no throttle. */
  rateLimitPerSecond?: number | null;
  /** `launch`: each launch's events one at a time, in sequence order; null or absent: none. */
  ordering?: Ordering | null;
}

export interface EndpointPatchInput {
  url?: string;
  events?: string[];
  description?: string | null;
  disabled?: boolean;
  rateLimitPerSecond?: number | null;
  ordering?: Ordering | null;
}

const MAX_FILTERS = 50;

/**
 * Why `value` is not a usable webhook destination: absolute http(s) without credentials; in
 * production https and, judged from the URL alone, no literal non-public address or local name
 * (the same rule as a launch's webhookUrl; the connect-time guard still checks every attempt).
 */
export function webhookUrlProblem(value: unknown, requireHttps: boolean): string | undefined {
  if (typeof value !== 'string' || value.length === 0 || value.length > 2048) return 'must be a URL string of at most 2048 characters';
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return 'must be an absolute http(s) URL';
  }
  if ((url.protocol !== 'https:' && url.protocol !== 'http:') || url.hostname === '') return 'must be an absolute http(s) URL';
  if (url.username !== '' || url.password !== '') return 'must not contain credentials';
  if (requireHttps && url.protocol !== 'https:') return 'must use https in production';
  return requireHttps ? destinationProblem(url) : undefined;
}

function checkEvents(value: unknown, fields: FieldError[]): string[] | undefined {
  if (!Array.isArray(value) || value.length === 0 || value.length > MAX_FILTERS || !value.every((v) => typeof v === 'string')) {
    fields.push({ field: 'events', message: `must be a non-empty array of at most ${MAX_FILTERS} strings` });
    return undefined;
  }
  value.forEach((entry: string, i) => {
    const problem = filterEntryProblem(entry);
    if (problem) fields.push({ field: `events[${i}]`, message: problem });
  });
  return [...new Set(value as string[])];
}

function checkDescription(value: unknown, fields: FieldError[]): string | null | undefined {
  if (value === null) return null;
  if (typeof value !== 'string' || value.length > 500) {
    fields.push({ field: 'description', message: 'must be a string of at most 500 characters, or null' });
    return undefined;
  }
  return value;
}

/** The most a throttle may allow: beyond it a throttle says nothing the per-endpoint in-flight cap does not. */
export const MAX_RATE_LIMIT_PER_SECOND = 1_000;

function checkRate(value: unknown, fields: FieldError[]): number | null | undefined {
  if (value === null) return null;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > MAX_RATE_LIMIT_PER_SECOND) {
    fields.push({ field: 'rateLimitPerSecond', message: `must be an integer from 1 to ${MAX_RATE_LIMIT_PER_SECOND}, or null for no throttle` });
    return undefined;
  }
  return value;
}

function checkOrdering(value: unknown, fields: FieldError[]): Ordering | null | undefined {
  if (value === null) return null;
  if (typeof value !== 'string' || !(ORDERINGS as readonly string[]).includes(value)) {
    fields.push({ field: 'ordering', message: `must be ${ORDERINGS.map((o) => `"${o}"`).join(' or ')} (each launch's events one at a time, in sequence order), or null for none` });
    return undefined;
  }
  return value as Ordering;
}

function objectBody(body: unknown): Record<string, unknown> {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new InvalidInputError('Request body must be a JSON object');
  return body as Record<string, unknown>;
}

function unknownFields(body: Record<string, unknown>, allowed: string[], fields: FieldError[]): void {
  for (const key of Object.keys(body)) if (!allowed.includes(key)) fields.push({ field: key, message: 'is not a known field' });
}

function refuse(fields: FieldError[], what: string): void {
  if (fields.length > 0) throw new InvalidInputError(`The ${what} is invalid`, { fields, validKinds: SUBSCRIBABLE_KINDS });
}

/** `POST /webhook-endpoints` body: `{url, events?, description?, signatureScheme?}`. */
export function parseEndpointCreate(raw: unknown, options: { requireHttps: boolean }): EndpointCreateInput {
  const body = objectBody(raw);
  const fields: FieldError[] = [];
  unknownFields(body, ['url', 'events', 'description', 'signatureScheme', 'rateLimitPerSecond', 'ordering'], fields);
  const urlProblem = webhookUrlProblem(body.url, options.requireHttps);
  if (urlProblem) fields.push({ field: 'url', message: urlProblem });
  const events = body.events === undefined ? ['*'] : checkEvents(body.events, fields);
  const description = body.description === undefined ? null : checkDescription(body.description, fields);
  const scheme = body.signatureScheme === undefined ? 'service' : body.signatureScheme;
  if (scheme !== 'service' && scheme !== 'standard') fields.push({ field: 'signatureScheme', message: 'must be "service" or "standard"' });
  const rateLimitPerSecond = body.rateLimitPerSecond === undefined ? null : checkRate(body.rateLimitPerSecond, fields);
  const ordering = body.ordering === undefined ? null : checkOrdering(body.ordering, fields);
  refuse(fields, 'webhook endpoint');
  return { url: body.url as string, events: events!, description: description ?? null, signatureScheme: scheme as SignatureSchemeName, rateLimitPerSecond: rateLimitPerSecond ?? null, ordering: ordering ?? null };
}

/** `PATCH /webhook-endpoints/:id` body: any of `{url, events, description, disabled}`. */
export function parseEndpointPatch(raw: unknown, options: { requireHttps: boolean }): EndpointPatchInput {
  const body = objectBody(raw);
  const fields: FieldError[] = [];
  unknownFields(body, ['url', 'events', 'description', 'disabled', 'rateLimitPerSecond', 'ordering'], fields);
  const out: EndpointPatchInput = {};
  if (body.url !== undefined) {
    const problem = webhookUrlProblem(body.url, options.requireHttps);
    if (problem) fields.push({ field: 'url', message: problem });
    else out.url = body.url as string;
  }
  if (body.events !== undefined) out.events = checkEvents(body.events, fields);
  if (body.description !== undefined) out.description = checkDescription(body.description, fields);
  if (body.disabled !== undefined) {
    if (typeof body.disabled !== 'boolean') fields.push({ field: 'disabled', message: 'must be true or false' });
    else out.disabled = body.disabled;
  }
  if (body.rateLimitPerSecond !== undefined) {
    const rate = checkRate(body.rateLimitPerSecond, fields);
    if (rate !== undefined) out.rateLimitPerSecond = rate;
  }
  if (body.ordering !== undefined) {
    const ordering = checkOrdering(body.ordering, fields);
    if (ordering !== undefined) out.ordering = ordering;
  }
  if (fields.length === 0 && Object.keys(out).length === 0) fields.push({ field: 'body', message: 'give at least one of url, events, description, disabled, rateLimitPerSecond, ordering' });
  refuse(fields, 'webhook endpoint update');
  return out;
}

/** Most a rotation overlap may last: a week. */
export const MAX_ROTATION_OVERLAP_SECONDS = 7 * 86_400;

/** `POST /webhook-endpoints/:id/rotate-secret` body: `{expiresInSeconds?}` (default 86400; 0 ends the old secret now). */
export function parseRotate(raw: unknown): { expiresInSeconds: number } {
  const body = raw === undefined || raw === null ? {} : objectBody(raw);
  const fields: FieldError[] = [];
  unknownFields(body, ['expiresInSeconds'], fields);
  const value = body.expiresInSeconds === undefined ? 86_400 : body.expiresInSeconds;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0 || value > MAX_ROTATION_OVERLAP_SECONDS) {
    fields.push({ field: 'expiresInSeconds', message: `must be an integer from 0 to ${MAX_ROTATION_OVERLAP_SECONDS}` });
  }
  refuse(fields, 'rotation request');
  return { expiresInSeconds: value as number };
}

const isoTime = (value: unknown) => (typeof value === 'string' && /^\d{4}-\d{2}-\d{2}T/.test(value) ? Date.parse(value) : Number.NaN);

/** `POST /webhook-endpoints/:id/recover` body: `{since: ISO 8601, until?: ISO 8601}`, since not in the future, until after since. */
export function parseRecover(raw: unknown, now: number): { since: number; until?: number } {
  const body = objectBody(raw);
  const fields: FieldError[] = [];
  unknownFields(body, ['since', 'until'], fields);
  const since = isoTime(body.since);
  if (!Number.isFinite(since)) fields.push({ field: 'since', message: 'must be an ISO 8601 date-time, e.g. 2026-01-01T00:00:00Z' });
  else if (since > now) fields.push({ field: 'since', message: 'must not be in the future' });
  const until = body.until === undefined || body.until === null ? undefined : isoTime(body.until);
  if (until !== undefined && !Number.isFinite(until)) fields.push({ field: 'until', message: 'must be an ISO 8601 date-time, e.g. 2026-01-02T00:00:00Z, or left out' });
  else if (until !== undefined && Number.isFinite(since) && until <= since) fields.push({ field: 'until', message: 'must be after since' });
  refuse(fields, 'recover request');
  return until === undefined ? { since } : { since, until };
}
