import type * as Api from '@opentelemetry/api';

/**
 * Tracing (docs/configuration.md, "Tracing"; docs/architecture.md, "Tracing"). Off unless an OTLP
 * endpoint is configured: then `startTracing` loads the OpenTelemetry SDK (src/lib/tracingSdk.ts) and
 * every function here makes spans. Off, nothing of OpenTelemetry is loaded and each function is one
 * check of `active` (`openSpan` answers undefined, `within` calls its function, `currentTraceparent`
 * answers null): the bench's `tracing-off` row measures that this costs nothing.
 *
 * The trace context crosses the durable hops as a W3C `traceparent` string: a launch row keeps the
 * request's (`launches.trace_parent`), each outbox event the span's that recorded it
 * (`outbox_events.trace_parent`), and each webhook attempt is a span under its event's context whose
 * own context goes out in the delivery's `traceparent` header.
 */

/** The OTLP/HTTP settings read from the standard OTEL_* variables (src/config/config.ts, `tracingVar`). */
export interface TracingConfig {
  /** OTEL_EXPORTER_OTLP_TRACES_PROTOCOL, else OTEL_EXPORTER_OTLP_PROTOCOL; default http/protobuf. */
  protocol: 'http/protobuf' | 'http/json';
  /** Where spans are posted: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, else OTEL_EXPORTER_OTLP_ENDPOINT + /v1/traces. */
  url: string;
  /** OTEL_SERVICE_NAME (default launch-service); OTEL_RESOURCE_ATTRIBUTES are added by the SDK. */
  serviceName: string;
}

export type SpanKindName = 'server' | 'client' | 'internal' | 'consumer' | 'producer';

/** A span opened with {@link openSpan}: run work inside it, then end it once. */
export interface SpanHandle {
  /** This span's context as a W3C traceparent (`00-<trace id>-<span id>-<flags>`). */
  readonly traceparent: string;
  readonly traceId: string;
  /** Runs `fn` with this span as the current one (spans and events made inside are its children). */
  run<T>(fn: () => T): T;
  setAttributes(attributes: Api.Attributes): void;
  updateName(name: string): void;
  /** Ends the span; an error marks it failed and is recorded on it. */
  end(error?: unknown): void;
  /** Marks the span failed without an exception (a webhook attempt answered 500). */
  fail(message: string): void;
}

interface Active {
  api: typeof Api;
  tracer: Api.Tracer;
  shutdown(): Promise<void>;
  users: number;
}

let active: Active | null = null;
let starting: Promise<void> | null = null;

/** True while spans are recorded and exported. */
export function tracingOn(): boolean {
  return active !== null;
}

/**
 * Loads the SDK and starts exporting (idempotent; every service that starts it stops it once).
 * Exporter settings (endpoint, headers, timeout, compression), the sampler, span limits and the
 * batch processor's settings are the SDK's own reading of the OTEL_* variables.
 */
export async function startTracing(config: TracingConfig): Promise<void> {
  if (active) {
    active.users += 1;
    return;
  }
  if (starting) {
    await starting;
    return startTracing(config);
  }
  starting = (async () => {
    const [api, sdk] = await Promise.all([import('@opentelemetry/api'), import('./tracingSdk.js')]);
    const started = await sdk.startSdk(api, config);
    active = { api, tracer: started.tracer, shutdown: started.shutdown, users: 1 };
  })();
  try {
    await starting;
  } finally {
    starting = null;
  }
}

/** Flushes what was recorded and stops tracing, once the last service that started it stops. */
export async function stopTracing(): Promise<void> {
  const current = active;
  if (!current) return;
  current.users -= 1;
  if (current.users > 0) return;
  active = null;
  await current.shutdown();
}

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/** Parses a W3C traceparent (version 00); undefined for anything else, or an all-zero id. */
export function parseTraceparent(value: string | null | undefined): { traceId: string; spanId: string; flags: number } | undefined {
  const m = value ? TRACEPARENT.exec(value.trim().toLowerCase()) : null;
  if (!m || /^0+$/.test(m[1]!) || /^0+$/.test(m[2]!)) return undefined;
  return { traceId: m[1]!, spanId: m[2]!, flags: parseInt(m[3]!, 16) };
}

function formatTraceparent(ctx: Api.SpanContext): string {
  return `00-${ctx.traceId}-${ctx.spanId}-${(ctx.traceFlags & 0xff).toString(16).padStart(2, '0')}`;
}

/**
 * Opens a span: a child of `parent` (a traceparent read from a request header or a row) when it is
 * valid, else of the current span, else the root of a new trace. Undefined while tracing is off.
 */
export function openSpan(name: string, options: { attributes?: Api.Attributes; parent?: string | null; kind?: SpanKindName } = {}): SpanHandle | undefined {
  const on = active;
  if (!on) return undefined;
  const { api, tracer } = on;
  let parentContext = api.context.active();
  if (options.parent !== undefined) {
    const remote = parseTraceparent(options.parent);
    parentContext = remote
      ? api.trace.setSpanContext(api.ROOT_CONTEXT, { traceId: remote.traceId, spanId: remote.spanId, traceFlags: remote.flags, isRemote: true })
      : api.ROOT_CONTEXT;
  }
  const kind = { server: api.SpanKind.SERVER, client: api.SpanKind.CLIENT, internal: api.SpanKind.INTERNAL, consumer: api.SpanKind.CONSUMER, producer: api.SpanKind.PRODUCER }[options.kind ?? 'internal'];
  const span = tracer.startSpan(name, { kind, attributes: options.attributes }, parentContext);
  const spanContext = api.trace.setSpan(parentContext, span);
  let ended = false;
  return {
    traceparent: formatTraceparent(span.spanContext()),
    traceId: span.spanContext().traceId,
    run: (fn) => api.context.with(spanContext, fn),
    setAttributes: (attributes) => void span.setAttributes(attributes),
    updateName: (n) => void span.updateName(n),
    fail(message) {
      span.setStatus({ code: api.SpanStatusCode.ERROR, message });
    },
    end(error) {
      if (ended) return;
      ended = true;
      if (error !== undefined) {
        span.recordException(error instanceof Error ? error : String(error));
        span.setStatus({ code: api.SpanStatusCode.ERROR, message: error instanceof Error ? error.message : String(error) });
      }
      span.end();
    },
  };
}

/** Runs `fn` inside `span` (see {@link SpanHandle.run}), or just runs it when there is no span. */
export function within<T>(span: SpanHandle | undefined, fn: () => T): T {
  return span ? span.run(fn) : fn();
}

/** Runs `fn` in a new span ({@link openSpan}) that ends when it settles, failed when it throws. */
export async function inSpan<T>(name: string, options: Parameters<typeof openSpan>[1], fn: (span: SpanHandle | undefined) => Promise<T>): Promise<T> {
  const span = openSpan(name, options);
  if (!span) return fn(undefined);
  try {
    const result = await span.run(() => fn(span));
    span.end();
    return result;
  } catch (error) {
    span.end(error);
    throw error;
  }
}

/** The current span's traceparent (what an event recorded now is linked to); null while tracing is off or outside any span. */
export function currentTraceparent(): string | null {
  const on = active;
  if (!on) return null;
  const ctx = on.api.trace.getSpanContext(on.api.context.active());
  return ctx && on.api.isSpanContextValid(ctx) ? formatTraceparent(ctx) : null;
}
