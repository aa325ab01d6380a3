import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One span as an OTLP receiver sees it, ids in hex. */
export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  /** OTLP's SpanKind: 1 internal, 2 server, 3 client. */
  kind: number;
  attributes: Record<string, unknown>;
  /** Status code: 0 unset, 1 ok, 2 error. */
  status: number;
  serviceName: string | undefined;
}

export interface OtlpReceiver {
  /** The base URL (OTEL_EXPORTER_OTLP_ENDPOINT); spans are posted to `${url}/v1/traces`. */
  url: string;
  spans: ReceivedSpan[];
  /** The content types the export requests came with. */
  contentTypes: string[];
  close(): Promise<void>;
}

/**
 * A real OTLP/HTTP trace receiver on 127.0.0.1 (what a collector's otlphttp receiver does): it takes
 * POST /v1/traces in protobuf (application/x-protobuf, decoded here by the wire format of
 * opentelemetry-proto's ExportTraceServiceRequest) or JSON (application/json, OTLP/JSON), and
 * answers as the protocol says (an empty ExportTraceServiceResponse).
 */
export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const receiver: OtlpReceiver = { url: '', spans: [], contentTypes: [], close: async () => undefined };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const type = String(req.headers['content-type'] ?? '');
      if (req.method !== 'POST' || req.url !== '/v1/traces') return void res.writeHead(404).end();
      receiver.contentTypes.push(type);
      const body = Buffer.concat(chunks);
      try {
        if (type.startsWith('application/x-protobuf')) {
          receiver.spans.push(...decodeProtobufRequest(body));
          res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end(Buffer.alloc(0));
        } else {
          receiver.spans.push(...decodeJsonRequest(JSON.parse(body.toString('utf8'))));
          res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
        }
      } catch (error) {
        res.writeHead(400).end(String(error));
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  receiver.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  receiver.close = () => new Promise<void>((resolve) => server.close(() => resolve()));
  return receiver;
}

type Field = { no: number; wire: number; value: bigint | Buffer };

/** The fields of one protobuf message (wire types 0, 1, 2, 5). */
function fields(buf: Buffer): Field[] {
  const out: Field[] = [];
  let i = 0;
  const varint = (): bigint => {
    let result = 0n;
    let shift = 0n;
    for (;;) {
      const b = buf[i++]!;
      result |= BigInt(b & 0x7f) << shift;
      if ((b & 0x80) === 0) return result;
      shift += 7n;
    }
  };
  while (i < buf.length) {
    const tag = Number(varint());
    const no = tag >> 3;
    const wire = tag & 7;
    if (wire === 0) out.push({ no, wire, value: varint() });
    else if (wire === 1) {
      out.push({ no, wire, value: buf.readBigUInt64LE(i) });
      i += 8;
    } else if (wire === 5) {
      out.push({ no, wire, value: BigInt(buf.readUInt32LE(i)) });
      i += 4;
    } else if (wire === 2) {
      const len = Number(varint());
      out.push({ no, wire, value: buf.subarray(i, i + len) });
      i += len;
    } else throw new Error(`unsupported wire type ${wire}`);
  }
  return out;
}

const bytesOf = (fs: Field[], no: number): Buffer[] => fs.filter((f) => f.no === no && f.wire === 2).map((f) => f.value as Buffer);

/** AnyValue: string 1, bool 2, int 3, double 4 (as fixed64 bits), array 5. */
function anyValue(buf: Buffer): unknown {
  const [f] = fields(buf);
  if (!f) return undefined;
  if (f.no === 1) return (f.value as Buffer).toString('utf8');
  if (f.no === 2) return f.value === 1n;
  if (f.no === 3) return Number(BigInt.asIntN(64, f.value as bigint));
  if (f.no === 4) {
    const b = Buffer.alloc(8);
    b.writeBigUInt64LE(f.value as bigint);
    return b.readDoubleLE(0);
  }
  if (f.no === 5) return bytesOf(fields(f.value as Buffer), 1).map(anyValue);
  return undefined;
}

function keyValues(list: Buffer[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const kv of list) {
    const fs = fields(kv);
    const key = bytesOf(fs, 1)[0]?.toString('utf8') ?? '';
    const value = bytesOf(fs, 2)[0];
    out[key] = value ? anyValue(value) : undefined;
  }
  return out;
}

function decodeProtobufRequest(body: Buffer): ReceivedSpan[] {
  const spans: ReceivedSpan[] = [];
  for (const resourceSpans of bytesOf(fields(body), 1)) {
    const rs = fields(resourceSpans);
    const resource = bytesOf(rs, 1)[0];
    const serviceName = resource ? (keyValues(bytesOf(fields(resource), 1))['service.name'] as string | undefined) : undefined;
    for (const scopeSpans of bytesOf(rs, 2)) {
      for (const span of bytesOf(fields(scopeSpans), 2)) {
        const sf = fields(span);
        const status = bytesOf(sf, 15)[0];
        spans.push({
          traceId: bytesOf(sf, 1)[0]?.toString('hex') ?? '',
          spanId: bytesOf(sf, 2)[0]?.toString('hex') ?? '',
          parentSpanId: bytesOf(sf, 4)[0]?.toString('hex') ?? '',
          name: bytesOf(sf, 5)[0]?.toString('utf8') ?? '',
          kind: Number(sf.find((f) => f.no === 6)?.value ?? 0n),
          attributes: keyValues(bytesOf(sf, 9)),
          status: status ? Number(fields(status).find((f) => f.no === 3)?.value ?? 0n) : 0,
          serviceName,
        });
      }
    }
  }
  return spans;
}

type Json = Record<string, any>;

/** OTLP/JSON ids are hex strings; base64 is accepted too. */
function hexId(value: unknown): string {
  if (typeof value !== 'string' || value === '') return '';
  return /^[0-9a-f]+$/i.test(value) && (value.length === 32 || value.length === 16) ? value.toLowerCase() : Buffer.from(value, 'base64').toString('hex');
}

function jsonValue(v: Json | undefined): unknown {
  if (!v) return undefined;
  if ('stringValue' in v) return v.stringValue;
  if ('boolValue' in v) return v.boolValue;
  if ('intValue' in v) return Number(v.intValue);
  if ('doubleValue' in v) return v.doubleValue;
  if ('arrayValue' in v) return ((v.arrayValue as Json).values ?? []).map(jsonValue);
  return undefined;
}

function decodeJsonRequest(body: Json): ReceivedSpan[] {
  const spans: ReceivedSpan[] = [];
  for (const rs of (body.resourceSpans ?? []) as Json[]) {
    const serviceName = jsonValue(((rs.resource?.attributes ?? []) as Json[]).find((a) => a.key === 'service.name')?.value) as string | undefined;
    for (const ss of (rs.scopeSpans ?? []) as Json[]) {
      for (const s of (ss.spans ?? []) as Json[]) {
        spans.push({
          traceId: hexId(s.traceId),
          spanId: hexId(s.spanId),
          parentSpanId: hexId(s.parentSpanId),
          name: s.name,
          kind: Number(s.kind ?? 0),
          attributes: Object.fromEntries(((s.attributes ?? []) as Json[]).map((a) => [a.key, jsonValue(a.value)])),
          status: Number(s.status?.code ?? 0),
          serviceName,
        });
      }
    }
  }
  return spans;
}
