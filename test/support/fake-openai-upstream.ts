import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One request the fake received, with a way to learn that its client went away before the answer ended. */
export interface UpstreamRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: Record<string, unknown>;
  /** Which TCP connection carried it (numbered from 1 in order of arrival): shows keep-alive reuse. */
  connection: number;
  /** Resolves when the connection closes before the response was finished (the client aborted). */
  aborted: Promise<void>;
}

export type UpstreamHandler = (request: UpstreamRequest, res: ServerResponse) => void | Promise<void>;

/**
 * A scripted OpenAI-compatible server over real HTTP (node:http), standing in for vLLM, Ollama & co.
 * Each test installs a handler per path; every request is recorded for assertions. `GET …/models` (the
 * gateway's health probe) answers 200 unless a test installs a handler for it. It counts the requests it
 * has in flight (probes aside) and their maximum, and can be killed (port closed, connections cut) and
 * revived on the same port.
 */
export class FakeOpenAIUpstream {
  readonly requests: UpstreamRequest[] = [];
  /** Requests (probes aside) whose response has not ended yet, and the most there ever were at once. */
  inFlight = 0;
  maxInFlight = 0;
  private readonly handlers = new Map<string, UpstreamHandler>();
  private readonly arrivals: Array<(request: UpstreamRequest) => void> = [];
  private readonly responses = new Set<ServerResponse>();
  private alive = true;

  private constructor(
    private readonly server: Server,
    readonly baseUrl: string,
    private readonly port: number,
  ) {}

  /** Requests other than health probes (`GET …/models`). */
  get work(): UpstreamRequest[] {
    return this.requests.filter((request) => !isProbe(request));
  }

  /** Closes the port and cuts every connection: the upstream is gone (connection refused). */
  async kill(): Promise<void> {
    if (!this.alive) return;
    this.alive = false;
    for (const res of this.responses) res.destroy();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  /** Listens again on the same port. */
  async revive(): Promise<void> {
    if (this.alive) return;
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(this.port, '127.0.0.1', () => {
        this.server.off('error', reject);
        resolve();
      });
    });
    this.alive = true;
  }

  static async start(): Promise<FakeOpenAIUpstream> {
    let fake: FakeOpenAIUpstream | null = null;
    const connections = new WeakMap<object, number>();
    let opened = 0;
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let body: Record<string, unknown>;
        try {
          body = JSON.parse(text) as Record<string, unknown>;
        } catch {
          body = { unparsed: text };
        }
        const request = { method: req.method ?? '', path: req.url ?? '', headers: req.headers, body };
        fake?.receive({ ...request, connection: connections.get(req.socket) ?? 0 }, res);
      });
    });
    server.on('connection', (socket) => connections.set(socket, ++opened));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    fake = new FakeOpenAIUpstream(server, `http://127.0.0.1:${port}/v1`, port);
    return fake;
  }

  /** Answers requests to `path` (e.g. "/v1/chat/completions") with `handler` until replaced. */
  handle(path: string, handler: UpstreamHandler): void {
    this.handlers.set(path, handler);
  }

  /** The next request to arrive; ask before sending the request that causes it. */
  nextRequest(): Promise<UpstreamRequest> {
    return new Promise((resolve) => this.arrivals.push(resolve));
  }

  get last(): UpstreamRequest {
    const request = this.requests.at(-1);
    if (!request) throw new Error('the fake upstream received no request');
    return request;
  }

  async stop(): Promise<void> {
    await this.kill();
  }

  private receive(received: Omit<UpstreamRequest, 'aborted'>, res: ServerResponse): void {
    this.responses.add(res);
    const probe = isProbe(received);
    if (!probe) {
      this.inFlight++;
      this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    }
    const aborted = new Promise<void>((resolve) =>
      res.on('close', () => {
        this.responses.delete(res);
        if (!probe) this.inFlight--;
        if (!res.writableFinished) resolve();
      }),
    );
    const request: UpstreamRequest = { ...received, aborted };
    this.requests.push(request);
    this.arrivals.shift()?.(request);
    const handler = this.handlers.get(request.path);
    if (!handler && probe) {
      json(res, 200, { object: 'list', data: [{ id: 'upstream-llama', object: 'model' }] });
      return;
    }
    if (!handler) {
      json(res, 404, { error: { message: `no handler for ${request.path}`, type: 'invalid_request_error' } });
      return;
    }
    Promise.resolve(handler(request, res)).catch((error: unknown) => {
      if (!res.headersSent) json(res, 500, { error: { message: String(error) } });
      else res.destroy();
    });
  }
}

const isProbe = (request: { method: string; path: string }) =>
  request.method === 'GET' && request.path.endsWith('/models');

export function json(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
    ...headers,
  });
  res.end(text);
}

/** Starts an SSE answer as vLLM and OpenAI send it. */
export function startStream(res: ServerResponse): void {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  res.flushHeaders();
}

/** Writes one `data:` event; resolves once it is handed to the socket, so events leave one at a time. */
export function sendEvent(res: ServerResponse, data: unknown): Promise<void> {
  const text = typeof data === 'string' ? data : JSON.stringify(data);
  return new Promise((resolve) => res.write(`data: ${text}\n\n`, () => resolve()));
}

/**
 * A whole streamed chat completion of `pieces` as an OpenAI-compatible upstream sends it: the role, a chunk
 * per piece, `finish`, then usage (11 prompt tokens, one completion token per piece) and `[DONE]`.
 */
export async function streamText(
  res: ServerResponse,
  pieces: readonly string[],
  finish = 'stop',
): Promise<void> {
  startStream(res);
  await sendEvent(res, chunk([{ role: 'assistant', content: '' }]));
  for (const piece of pieces) await sendEvent(res, chunk([{ content: piece }]));
  await sendEvent(res, chunk([{ finish_reason: finish }]));
  await sendEvent(res, chunk([], { prompt_tokens: 11, completion_tokens: pieces.length }));
  await sendEvent(res, '[DONE]');
  res.end();
}

/** One choice of a scripted chunk; `tool_calls` and `logprobs` as OpenAI and vLLM stream them. */
export interface ScriptedChoice {
  index?: number;
  content?: string | null;
  role?: string;
  tool_calls?: Array<{
    index: number;
    id?: string;
    type?: 'function';
    function: { name?: string; arguments?: string };
  }>;
  logprobs?: { content: unknown[] | null; refusal: null } | null;
  finish_reason?: string | null;
}

/** A chat.completion.chunk with the given choices. */
export function chunk(
  choices: ScriptedChoice[],
  usage?: { prompt_tokens: number; completion_tokens: number },
): Record<string, unknown> {
  return {
    id: 'chatcmpl-upstream',
    object: 'chat.completion.chunk',
    created: 1_700_000_000,
    model: 'upstream-llama',
    choices: choices.map(
      ({ index = 0, content, role, tool_calls, logprobs = null, finish_reason = null }) => ({
        index,
        delta: {
          ...(role !== undefined && { role }),
          ...(content !== undefined && { content }),
          ...(tool_calls !== undefined && { tool_calls }),
        },
        logprobs,
        finish_reason,
      }),
    ),
    ...(usage !== undefined && {
      usage: { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens },
    }),
  };
}
