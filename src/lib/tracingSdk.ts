import type * as Api from '@opentelemetry/api';

/**
 * The OpenTelemetry SDK, loaded only by `startTracing` (src/lib/tracing.ts) when an OTLP endpoint is
 * configured: a tracer provider with a batch span processor and an OTLP/HTTP exporter, protobuf or
 * JSON as OTEL_EXPORTER_OTLP_(TRACES_)PROTOCOL says. The exporter posts to `config.url` and reads its headers,
 * timeout and compression from the OTEL_EXPORTER_OTLP_* variables, the provider its sampler
 * (OTEL_TRACES_SAMPLER) and span limits, the processor OTEL_BSP_*; the resource is
 * OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES. The context follows async calls through
 * AsyncLocalStorage.
 */
export async function startSdk(api: typeof Api, config: { protocol: 'http/protobuf' | 'http/json'; url: string; serviceName: string }): Promise<{ tracer: Api.Tracer; shutdown(): Promise<void> }> {
  // Imported here, not at the top: the service's bundle (scripts/build.mjs) inlines this file, and a
  // top-level import of a package would load it at every start.
  const [{ AsyncLocalStorageContextManager }, { defaultResource, detectResources, envDetector, resourceFromAttributes }, { BasicTracerProvider, BatchSpanProcessor }, exporters] = await Promise.all([
    import('@opentelemetry/context-async-hooks'),
    import('@opentelemetry/resources'),
    import('@opentelemetry/sdk-trace-base'),
    config.protocol === 'http/json' ? import('@opentelemetry/exporter-trace-otlp-http') : import('@opentelemetry/exporter-trace-otlp-proto'),
  ]);
  const exporter = new exporters.OTLPTraceExporter({ url: config.url });
  const resource = defaultResource()
    .merge(resourceFromAttributes({ 'service.name': config.serviceName }))
    .merge(detectResources({ detectors: [envDetector] }));
  const provider = new BasicTracerProvider({ resource, spanProcessors: [new BatchSpanProcessor(exporter)] });
  const contextManager = new AsyncLocalStorageContextManager().enable();
  api.context.setGlobalContextManager(contextManager);
  return {
    tracer: provider.getTracer('launch-service'),
    async shutdown() {
      try {
        await provider.shutdown(); // exports what is still batched
      } finally {
        api.context.disable();
      }
    },
  };
}
