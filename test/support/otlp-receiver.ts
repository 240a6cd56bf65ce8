import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One span as an OTLP/HTTP JSON export carries it, with its process's `service.name`. */
export interface ReceivedSpan {
  service: string;
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  /** OTLP's SpanKind: 1 internal, 2 server, 3 client, 4 producer, 5 consumer. */
  kind: number;
  startMs: number;
  endMs: number;
  attributes: Record<string, unknown>;
  links: { traceId: string; spanId: string }[];
  events: { name: string; attributes: Record<string, unknown> }[];
  /** OTLP's status code: 0 unset, 1 ok, 2 error. */
  status: number;
}

interface OtlpValue {
  stringValue?: string;
  intValue?: string | number;
  doubleValue?: number;
  boolValue?: boolean;
  arrayValue?: { values?: OtlpValue[] };
}
interface OtlpAttribute {
  key: string;
  value: OtlpValue;
}
interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  startTimeUnixNano: string | number;
  endTimeUnixNano: string | number;
  attributes?: OtlpAttribute[];
  links?: { traceId: string; spanId: string }[];
  events?: { name: string; attributes?: OtlpAttribute[] }[];
  status?: { code?: number };
}
interface ExportTraceServiceRequest {
  resourceSpans?: { resource?: { attributes?: OtlpAttribute[] }; scopeSpans?: { spans?: OtlpSpan[] }[] }[];
}

/**
 * A local OpenTelemetry collector's front door for tests: accepts OTLP/HTTP JSON exports
 * (`POST /v1/traces`, an ExportTraceServiceRequest) and keeps every span, flattened.
 */
export class OtlpReceiver {
  readonly spans: ReceivedSpan[] = [];

  private constructor(
    private readonly server: Server,
    readonly endpoint: string,
  ) {}

  static async start(): Promise<OtlpReceiver> {
    let receiver: OtlpReceiver | null = null;
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        if (req.method !== 'POST' || req.url !== '/v1/traces') {
          res.writeHead(404).end();
          return;
        }
        try {
          receiver?.receive(JSON.parse(Buffer.concat(chunks).toString('utf8')) as ExportTraceServiceRequest);
          res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
        } catch {
          res.writeHead(400).end();
        }
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    receiver = new OtlpReceiver(server, `http://127.0.0.1:${port}`);
    return receiver;
  }

  /** The spans of one trace. */
  trace(traceId: string): ReceivedSpan[] {
    return this.spans.filter((span) => span.traceId === traceId);
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private receive(request: ExportTraceServiceRequest): void {
    for (const { resource, scopeSpans } of request.resourceSpans ?? []) {
      const name = attributesOf(resource?.attributes)['service.name'];
      const service = typeof name === 'string' ? name : '';
      for (const { spans } of scopeSpans ?? []) {
        for (const span of spans ?? []) {
          this.spans.push({
            service,
            traceId: hexOf(span.traceId),
            spanId: hexOf(span.spanId),
            parentSpanId: hexOf(span.parentSpanId ?? ''),
            name: span.name,
            kind: span.kind,
            startMs: Number(BigInt(span.startTimeUnixNano) / 1_000_000n),
            endMs: Number(BigInt(span.endTimeUnixNano) / 1_000_000n),
            attributes: attributesOf(span.attributes),
            links: (span.links ?? []).map((link) => ({
              traceId: hexOf(link.traceId),
              spanId: hexOf(link.spanId),
            })),
            events: (span.events ?? []).map((event) => ({
              name: event.name,
              attributes: attributesOf(event.attributes),
            })),
            status: span.status?.code ?? 0,
          });
        }
      }
    }
  }
}

function attributesOf(attributes: OtlpAttribute[] | undefined): Record<string, unknown> {
  return Object.fromEntries((attributes ?? []).map(({ key, value }) => [key, valueOf(value)]));
}

function valueOf(value: OtlpValue): unknown {
  if (value.stringValue !== undefined) return value.stringValue;
  if (value.intValue !== undefined) return Number(value.intValue);
  if (value.doubleValue !== undefined) return value.doubleValue;
  if (value.boolValue !== undefined) return value.boolValue;
  if (value.arrayValue !== undefined) return (value.arrayValue.values ?? []).map(valueOf);
  return undefined;
}

/** OTLP JSON writes ids as hex; some encoders write base64: both read as hex. */
function hexOf(id: string): string {
  if (id === '' || /^[\da-f]+$/i.test(id)) return id.toLowerCase();
  return Buffer.from(id, 'base64').toString('hex');
}
