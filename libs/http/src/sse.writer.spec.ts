import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { SseWriter, type SseWriterOptions } from './sse.writer';
import { waitFor } from '@mgw/testing';

/** What a raw client has received so far: the header block, and the body split into HTTP chunks. */
interface Received {
  headersDone: boolean;
  statusLine: string;
  headers: Record<string, string>;
  /** Each chunk of the chunked encoding, decoded, in arrival order. */
  chunks: string[];
  /** True once the terminating zero-length chunk arrived. */
  complete: boolean;
}

/** Decodes the bytes read so far; an incomplete trailing chunk is simply not reported yet. */
function decode(raw: Buffer): Received {
  const result: Received = { headersDone: false, statusLine: '', headers: {}, chunks: [], complete: false };
  const headerEnd = raw.indexOf('\r\n\r\n');
  if (headerEnd < 0) return result;
  const [statusLine, ...lines] = raw.subarray(0, headerEnd).toString('latin1').split('\r\n');
  result.headersDone = true;
  result.statusLine = statusLine ?? '';
  for (const line of lines) {
    const colon = line.indexOf(':');
    result.headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  let offset = headerEnd + 4;
  for (;;) {
    const lineEnd = raw.indexOf('\r\n', offset);
    if (lineEnd < 0) break;
    const size = parseInt(raw.subarray(offset, lineEnd).toString('latin1'), 16);
    if (Number.isNaN(size)) throw new Error(`bad chunk header at ${offset}`);
    if (size === 0) {
      result.complete = true;
      break;
    }
    const start = lineEnd + 2;
    if (raw.length < start + size + 2) break;
    result.chunks.push(raw.subarray(start, start + size).toString('utf8'));
    offset = start + size + 2;
  }
  return result;
}

class RawClient {
  private raw = Buffer.alloc(0);
  closed = false;

  constructor(readonly socket: Socket) {
    socket.on('data', (data: Buffer) => {
      this.raw = Buffer.concat([this.raw, data]);
    });
    socket.on('close', () => {
      this.closed = true;
    });
    socket.on('error', () => undefined);
  }

  get received(): Received {
    return decode(this.raw);
  }

  get body(): string {
    return this.received.chunks.join('');
  }

  /** Bytes received so far, headers included. */
  get bytes(): number {
    return this.raw.length;
  }

  until(predicate: (received: Received) => boolean, timeoutMs = 5000): Promise<Received> {
    return waitFor(
      'the client to receive it',
      () => {
        const received = this.received;
        return predicate(received) && received;
      },
      timeoutMs,
      () => `; received ${JSON.stringify(this.received)}`,
    );
  }
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * What the client holds once it has every byte the server handed the socket, after one turn of the event
 * loop for any work the writer deferred: what was written so far, with no wait for what was not.
 */
async function everythingWritten(res: ServerResponse, client: RawClient): Promise<Received> {
  await new Promise<void>((resolve) => setImmediate(resolve));
  const written = res.socket?.bytesWritten ?? 0;
  return client.until(() => client.bytes >= written);
}

let server: Server | undefined;
let clients: RawClient[] = [];
const responses: ServerResponse[] = [];

/** Starts a server, connects a raw client, and returns the server-side response for that request. */
async function connectClient(): Promise<{ res: ServerResponse; client: RawClient }> {
  if (!server) {
    server = createServer((_req: IncomingMessage, res: ServerResponse) => {
      responses.push(res);
    });
    await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  }
  const { port } = server.address() as AddressInfo;
  const socket = connect(port, '127.0.0.1');
  const client = new RawClient(socket);
  clients.push(client);
  const before = responses.length;
  socket.write('GET /v1/chat/completions HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n');
  await waitFor('the request to reach the server', () => responses.length > before, 5000);
  return { res: responses[responses.length - 1]!, client };
}

function writerFor(res: ServerResponse, options: Partial<SseWriterOptions> = {}): SseWriter {
  return new SseWriter(res, {
    bufferLimitBytes: 1024 * 1024,
    keepAliveMs: 0,
    onOverflow: jest.fn(),
    ...options,
  });
}

afterEach(async () => {
  for (const client of clients) client.socket.destroy();
  clients = [];
  for (const res of responses) res.destroy();
  responses.length = 0;
  if (server) {
    const closing = server;
    server = undefined;
    closing.closeAllConnections();
    await new Promise<void>((resolve) => closing.close(() => resolve()));
  }
});

describe('SseWriter', () => {
  it('flushes event-stream headers on open(), before any data exists', async () => {
    const { res, client } = await connectClient();
    const writer = writerFor(res);
    expect((await everythingWritten(res, client)).headersDone).toBe(false);

    writer.open({ 'x-request-id': 'req-123' });
    const received = await client.until((r) => r.headersDone);
    expect(received.statusLine).toBe('HTTP/1.1 200 OK');
    expect(received.headers['content-type']).toMatch(/^text\/event-stream/);
    expect(received.headers['cache-control']).toContain('no-cache');
    expect(received.headers['x-request-id']).toBe('req-123');
    expect(received.headers['transfer-encoding']).toBe('chunked');
    const sofar = await everythingWritten(res, client);
    expect(sofar.chunks).toEqual([]);
    expect(sofar.complete).toBe(false);
    writer.close();
  });

  it('writes each data() at once as exactly one `data: <json>\\n\\n` event', async () => {
    const { res, client } = await connectClient();
    const writer = writerFor(res);
    writer.open({});
    writer.data('{"a":1}');
    await client.until((r) => r.chunks.length === 1);
    writer.data('{"text":"é 😀 \\"q\\""}');
    const received = await client.until((r) => r.chunks.length === 2);
    expect(received.chunks).toEqual(['data: {"a":1}\n\n', 'data: {"text":"é 😀 \\"q\\""}\n\n']);
    expect(received.complete).toBe(false);
    writer.close();
  });

  it('delivers events written before open() after the headers, in order', async () => {
    const { res, client } = await connectClient();
    const writer = writerFor(res);
    writer.data('{"n":1}');
    writer.data('{"n":2}');
    expect((await everythingWritten(res, client)).headersDone).toBe(false);
    writer.open({});
    writer.data('{"n":3}');
    const received = await client.until((r) => r.chunks.join('').includes('"n":3'));
    expect(received.headers['content-type']).toMatch(/^text\/event-stream/);
    expect(received.chunks.join('')).toBe('data: {"n":1}\n\ndata: {"n":2}\n\ndata: {"n":3}\n\n');
    writer.close();
  });

  it('ends with `data: [DONE]` and closes the response on done()', async () => {
    const { res, client } = await connectClient();
    const writer = writerFor(res);
    const finished = new Promise<void>((resolve) => res.on('finish', resolve));
    writer.open({});
    writer.data('{"x":true}');
    writer.done();
    const received = await client.until((r) => r.complete);
    expect(received.chunks.join('')).toBe('data: {"x":true}\n\ndata: [DONE]\n\n');
    expect(res.writableEnded).toBe(true);
    await finished;
    // Nothing may be written after the end.
    expect(() => writer.data('{"late":1}')).not.toThrow();
    expect(() => writer.done()).not.toThrow();
  });

  it('writes the error event then `data: [DONE]` on fail()', async () => {
    const { res, client } = await connectClient();
    const writer = writerFor(res);
    writer.open({});
    writer.data('{"partial":1}');
    const error = '{"error":{"message":"boom","type":"server_error","param":null,"code":"worker_error"}}';
    writer.fail(error);
    const received = await client.until((r) => r.complete);
    expect(received.chunks.join('')).toBe(`data: {"partial":1}\n\ndata: ${error}\n\ndata: [DONE]\n\n`);
    expect(res.writableEnded).toBe(true);
  });

  it('writes named events (`event:` before `data:`, with the id) for protocols that name them', async () => {
    const { res, client } = await connectClient();
    const writer = writerFor(res);
    writer.open({});
    writer.event('response.created', '{"n":1}');
    writer.event('response.output_text.delta', '{"n":2}', 7);
    const received = await client.until((r) => r.chunks.join('').includes('"n":2'));
    expect(received.chunks.join('')).toBe(
      'event: response.created\ndata: {"n":1}\n\nevent: response.output_text.delta\nid: 7\ndata: {"n":2}\n\n',
    );
    writer.close();
  });

  it('ends without `[DONE]` for a protocol that has no end line', async () => {
    const { res, client } = await connectClient();
    const writer = new SseWriter(res, {
      bufferLimitBytes: 1 << 20,
      keepAliveMs: 0,
      onOverflow: () => undefined,
      endLine: null,
    });
    writer.open({});
    writer.event('message_stop', '{"type":"message_stop"}');
    writer.done(3);
    const received = await client.until((r) => r.complete);
    expect(received.chunks.join('')).toBe('event: message_stop\ndata: {"type":"message_stop"}\n\n');
  });

  it('delivers a done() that happened before open() once the headers are out', async () => {
    const { res, client } = await connectClient();
    const writer = writerFor(res);
    writer.data('{"early":1}');
    writer.done();
    expect((await everythingWritten(res, client)).headersDone).toBe(false);
    writer.open({});
    const received = await client.until((r) => r.complete);
    expect(received.headers['content-type']).toMatch(/^text\/event-stream/);
    expect(received.chunks.join('')).toBe('data: {"early":1}\n\ndata: [DONE]\n\n');
  });

  it('sends a `: keep-alive` comment after keepAliveMs of silence', async () => {
    const { res, client } = await connectClient();
    const started = jest.spyOn(global, 'setInterval');
    const cleared = jest.spyOn(global, 'clearInterval');
    const writer = writerFor(res, { keepAliveMs: 50 });
    writer.open({});
    const wroteAt = Date.now();
    writer.data('{"first":1}');
    const received = await client.until((r) => r.chunks.length >= 2);
    // In this order, and not before keepAliveMs of silence (a lower bound: a loaded machine only delays it).
    expect(Date.now() - wroteAt).toBeGreaterThanOrEqual(45);
    expect(received.chunks.slice(0, 2)).toEqual(['data: {"first":1}\n\n', ': keep-alive\n\n']);
    writer.done();
    const final = await client.until((r) => r.complete);
    expect(final.chunks[final.chunks.length - 1]).toBe('data: [DONE]\n\n');
    // After the end no further keep-alives are written: every interval the writer started is cleared.
    // (Counting the process's timers instead races with the HTTP server's own keep-alive timer.)
    const intervals = started.mock.results.map((result) => result.value as unknown);
    expect(intervals.length).toBeGreaterThan(0);
    for (const interval of intervals) expect(cleared).toHaveBeenCalledWith(interval);
    started.mockRestore();
    cleared.mockRestore();
    expect((await everythingWritten(res, client)).chunks).toEqual(final.chunks);
  });

  it("writes the protocol's own keep-alive event and no end line when it has none (the Messages API)", async () => {
    const { res, client } = await connectClient();
    const ping = 'event: ping\ndata: {"type":"ping"}\n\n';
    const writer = writerFor(res, { keepAliveMs: 50, keepAlive: ping, endLine: null });
    writer.open({});
    writer.event('message_start', '{"type":"message_start"}');
    const received = await client.until((r) => r.chunks.length >= 2);
    expect(received.chunks.slice(0, 2)).toEqual([
      'event: message_start\ndata: {"type":"message_start"}\n\n',
      ping,
    ]);
    writer.done();
    const final = await client.until((r) => r.complete);
    expect(final.chunks[final.chunks.length - 1]).toBe(ping);
  });

  it('does not send keep-alives while events keep flowing', async () => {
    const { res, client } = await connectClient();
    // Events every 100 ms for 1.5 s against a 1 s keep-alive: a silence timer that events did not reset
    // would fire, while a pause would have to last ten times longer than asked to cause a false alarm.
    const writer = writerFor(res, { keepAliveMs: 1000 });
    writer.open({});
    for (let i = 0; i < 15; i++) {
      writer.data(`{"i":${i}}`);
      await sleep(100);
    }
    writer.done();
    const received = await client.until((r) => r.complete);
    expect(received.chunks.join('')).not.toContain('keep-alive');
  });

  it('sends no keep-alives when keepAliveMs is 0', async () => {
    const { res, client } = await connectClient();
    const started = jest.spyOn(global, 'setInterval');
    const writer = writerFor(res, { keepAliveMs: 0 });
    writer.open({});
    // No timer that could write one, and nothing written but the headers.
    expect(started).not.toHaveBeenCalled();
    started.mockRestore();
    expect((await everythingWritten(res, client)).chunks).toEqual([]);
    writer.close();
  });

  it('cuts a client that stops reading: onOverflow once, response destroyed, no more writes', async () => {
    const { res, client } = await connectClient();
    client.socket.pause();
    const onOverflow = jest.fn();
    const writer = writerFor(res, { bufferLimitBytes: 16 * 1024, onOverflow });
    writer.open({});
    const event = JSON.stringify({ pad: 'x'.repeat(64 * 1024) });
    let writes = 0;
    // The kernel's socket buffers absorb the first few megabytes; keep writing until they are full.
    while (onOverflow.mock.calls.length === 0 && writes < 2000) {
      writer.data(event);
      writes++;
      if (writes % 16 === 0) await sleep(1);
    }
    expect(onOverflow).toHaveBeenCalledTimes(1);
    expect(res.destroyed).toBe(true);
    writer.data(event);
    writer.done();
    writer.fail('{}');
    expect(onOverflow).toHaveBeenCalledTimes(1);
    client.socket.resume();
    await client.until(() => client.closed, 2000);
    // The stream was cut, not ended normally.
    expect(client.received.complete).toBe(false);
  });

  it('drops the connection of a client that never reads the end of a finished stream', async () => {
    const { res, client } = await connectClient();
    client.socket.pause();
    const writer = writerFor(res, { bufferLimitBytes: 64 * 1024 * 1024, flushTimeoutMs: 200 });
    writer.open({});
    // More than the kernel buffers hold, but under the cap: the stream ends with bytes still unsent.
    const event = JSON.stringify({ pad: 'z'.repeat(64 * 1024) });
    for (let i = 0; i < 200 && res.writableLength === 0; i++) {
      writer.data(event);
      await sleep(1);
    }
    for (let i = 0; i < 64; i++) writer.data(event);
    writer.done();
    expect(res.writableFinished).toBe(false);
    const startedAt = Date.now();
    while (!res.destroyed && Date.now() - startedAt < 3000) await sleep(10);
    expect(res.destroyed).toBe(true);
    client.socket.resume();
    await client.until(() => client.closed, 3000);
    expect(client.received.complete).toBe(false);
  });

  it('leaves a finished stream alone once it reached the client', async () => {
    const { res, client } = await connectClient();
    const writer = writerFor(res, { flushTimeoutMs: 50 });
    writer.open({});
    writer.data('{}');
    writer.done();
    const received = await client.until((r) => r.complete, 2000);
    // Both events, whole and in order. (How writes of one tick map to HTTP chunks is Node's choice: one
    // chunk each up to Node 24, one chunk for the tick from Node 26.)
    expect(received.chunks.join('')).toBe('data: {}\n\ndata: [DONE]\n\n');
    await sleep(100);
    expect(client.received.complete).toBe(true);
  });

  it('does not overflow a client that keeps reading', async () => {
    const { res, client } = await connectClient();
    const onOverflow = jest.fn();
    const writer = writerFor(res, { bufferLimitBytes: 256 * 1024, onOverflow });
    writer.open({});
    const events = Array.from({ length: 50 }, (_, i) => JSON.stringify({ i, pad: 'y'.repeat(1000) }));
    for (const event of events) writer.data(event);
    writer.done();
    const received = await client.until((r) => r.complete, 2000);
    expect(onOverflow).not.toHaveBeenCalled();
    // Every event, whole and in order, however Node frames one tick's writes into HTTP chunks.
    expect(received.chunks.join('')).toBe(`${events.map((e) => `data: ${e}\n\n`).join('')}data: [DONE]\n\n`);
  });
});
