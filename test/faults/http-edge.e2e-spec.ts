import { connect, type Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import OpenAI, { APIError } from 'openai';
import { collectSse } from '../support/sse';
import { Stack } from '../support/stack';

const ADMIN_TOKEN = 'admin-token-http-edge-0123456789abcdef';
const BODY_TIMEOUT_MS = 1500;
const HEADERS_TIMEOUT_MS = 1500;
/** Generous: the CPU is shared; what matters is that the answer comes, long before a client would give up. */
const ANSWER_WITHIN_MS = 15_000;
const FIFTY_MB = 50 * 1024 * 1024;

const catalog = {
  models: [
    { id: 'sim-chat', type: 'chat', owned_by: 'model-gateway', backend: { kind: 'simulator', mode: 'echo' } },
    // 20 tokens/s: a stream of ~60 tokens outlives the body deadline several times over.
    {
      id: 'paced-chat',
      type: 'chat',
      owned_by: 'tests',
      backend: { kind: 'simulator', mode: 'echo', tokensPerSecond: 20 },
    },
  ],
};

interface RawAnswer {
  status: number;
  /** The status line and headers, as sent. */
  head: string;
  body: string;
  elapsedMs: number;
}

function connectTo(stack: Stack): Promise<Socket> {
  const url = new URL(stack.baseUrl);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(url.port), url.hostname, () => resolve(socket));
    socket.once('error', reject);
  });
}

/** The first complete HTTP response on the socket (by Content-Length), or a rejection if none comes. */
function readAnswer(socket: Socket, withinMs = ANSWER_WITHIN_MS): Promise<RawAnswer> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    let data = Buffer.alloc(0);
    const timer = setTimeout(
      () => reject(new Error(`no complete answer within ${withinMs} ms (${data.length} bytes)`)),
      withinMs,
    );
    socket.on('data', (chunk: Buffer) => {
      data = Buffer.concat([data, chunk]);
      const headEnd = data.indexOf('\r\n\r\n');
      if (headEnd < 0) return;
      const head = data.subarray(0, headEnd).toString('latin1');
      const length = /\r\ncontent-length: *(\d+)/i.exec(head);
      if (!length) return;
      const bodyEnd = headEnd + 4 + Number(length[1]);
      if (data.length < bodyEnd) return;
      clearTimeout(timer);
      resolve({
        status: Number(head.split(' ')[1]),
        head,
        body: data.subarray(headEnd + 4, bodyEnd).toString('utf8'),
        elapsedMs: performance.now() - started,
      });
    });
    socket.on('error', (error) => {
      clearTimeout(timer);
      reject(new Error(`connection failed after ${data.length} bytes: ${error.message}`));
    });
    socket.on('close', () => {
      clearTimeout(timer);
      reject(new Error(`connection closed after ${data.length} bytes without a complete answer`));
    });
  });
}

function errorOf(answer: RawAnswer): { message: string; type: string; param: unknown; code: unknown } {
  const parsed = JSON.parse(answer.body) as {
    error: { message: string; type: string; param: unknown; code: unknown };
  };
  expect(Object.keys(parsed.error).sort()).toEqual(['code', 'message', 'param', 'type']);
  return parsed.error;
}

function head(method: string, path: string, headers: Record<string, string | number>): string {
  const lines = Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`);
  return `${method} ${path} HTTP/1.1\r\nhost: gateway\r\n${lines.join('')}\r\n`;
}

/** Writes `total` bytes of body as fast as the socket takes them; the first write error, if any. */
async function writeBody(socket: Socket, total: number): Promise<Error | null> {
  const chunk = Buffer.alloc(64 * 1024, 'a');
  let failure: Error | null = null;
  socket.on('error', (error) => (failure ??= error));
  for (let sent = 0; sent < total && failure === null && !socket.destroyed; sent += chunk.length) {
    const piece = total - sent < chunk.length ? chunk.subarray(0, total - sent) : chunk;
    if (!socket.write(piece)) {
      await new Promise<void>((resolve) => {
        const done = (): void => {
          socket.off('drain', done);
          socket.off('close', done);
          resolve();
        };
        socket.on('drain', done);
        socket.on('close', done);
      });
    }
  }
  return failure;
}

/** The gateway's HTTP edge under hostile or careless clients: who pays for a body, and when it is cut. */
describe('faults: the HTTP edge', () => {
  let stack: Stack;
  const sockets: Socket[] = [];

  const open = async (): Promise<Socket> => {
    const socket = await connectTo(stack);
    sockets.push(socket);
    return socket;
  };

  beforeAll(async () => {
    stack = await Stack.start({
      catalog,
      without: ['image-worker'],
      waitForModels: ['sim-chat', 'paced-chat'],
      env: {
        GATEWAY_ADMIN_TOKEN: ADMIN_TOKEN,
        BODY_TIMEOUT_MS: String(BODY_TIMEOUT_MS),
        HEADERS_TIMEOUT_MS: String(HEADERS_TIMEOUT_MS),
      },
      appEnv: { 'chat-worker': { WORKER_MODELS: 'sim-chat,paced-chat' } },
    });
  });

  afterEach(() => {
    for (const socket of sockets.splice(0)) socket.destroy();
  });

  afterAll(async () => {
    await stack?.stop();
  });

  describe('authentication before the body', () => {
    it('answers 401 to a request without a key before a single body byte was sent', async () => {
      const socket = await open();
      const answer = readAnswer(socket);
      // The headers announce 5 MB that never come: only a refusal from the headers alone can answer.
      socket.write(
        head('POST', '/v1/chat/completions', {
          'content-type': 'application/json',
          'content-length': 5_000_000,
        }),
      );
      const refused = await answer;
      expect(refused.status).toBe(401);
      expect(errorOf(refused).message).toContain('API key');
    });

    it('answers 401 to a wrong key before the body, and 404 to an admin route without the token', async () => {
      const wrong = await open();
      const wrongAnswer = readAnswer(wrong);
      wrong.write(
        head('POST', '/v1/chat/completions', {
          authorization: 'Bearer sk-not-a-key-123',
          'content-type': 'application/json',
          'content-length': 5_000_000,
        }),
      );
      const refused = await wrongAnswer;
      expect(refused.status).toBe(401);
      expect(errorOf(refused).code).toBe('invalid_api_key');

      const admin = await open();
      const adminAnswer = readAnswer(admin);
      admin.write(
        head('POST', '/admin/keys', { 'content-type': 'application/json', 'content-length': 5_000_000 }),
      );
      const adminRefused = await adminAnswer;
      expect(adminRefused.status).toBe(401);
      expect(errorOf(adminRefused).message).toContain('admin token');
    });

    it.each([
      ['invalid, over-deep JSON', 'application/json', `${'['.repeat(100_000)}not json`],
      ['a body of the wrong type', 'text/plain', 'hello'],
      ['an unknown field', 'application/json', JSON.stringify({ model: 'sim-chat', nope: 1 })],
    ])('answers 401, not 400/415, to %s without a key', async (_what, type, body) => {
      const res = await fetch(`${stack.baseUrl}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': type },
        body,
      });
      expect(res.status).toBe(401);
      expect(((await res.json()) as { error: { code: unknown } }).error.code).toBeNull();
    });

    it('keeps unknown routes 404 and public routes open, and serves a keyed request', async () => {
      const unknown = await fetch(`${stack.baseUrl}/v1/nothing-here`, { method: 'POST', body: '{' });
      expect(unknown.status).toBe(404);
      expect(((await unknown.json()) as { error: { code: string } }).error.code).toBe('unknown_url');
      expect((await fetch(`${stack.baseUrl}/healthz`)).status).toBe(200);
      const served = await stack.post('/v1/chat/completions', {
        model: 'sim-chat',
        messages: [{ role: 'user', content: 'hi' }],
      });
      expect(served.status).toBe(200);
    });
  });

  describe('the connection after an error answer', () => {
    /** Node's own keep-alive headers: the connection stays, and the client learns for how long. */
    const expectKeptAlive = (answer: RawAnswer): void => {
      expect(answer.head).toMatch(/\r\nconnection: keep-alive\r\n/i);
      expect(answer.head).toMatch(/\r\nkeep-alive: timeout=\d+/i);
    };
    const healthzOn = async (socket: Socket): Promise<RawAnswer> => {
      const answer = readAnswer(socket);
      socket.write(head('GET', '/healthz', {}));
      return answer;
    };

    it('keeps it, with keep-alive headers, after a 401 or a 404 answered before the body', async () => {
      const json = { 'content-type': 'application/json', 'content-length': 5 };
      for (const [method, path, headers, body, status] of [
        ['GET', '/v1/models', {}, '', 401],
        ['GET', '/v1/nothing-here', {}, '', 404],
        ['POST', '/v1/chat/completions', json, '{ } \n', 401],
      ] as const) {
        const socket = await open();
        const answer = readAnswer(socket);
        socket.write(head(method, path, headers));
        const refused = await answer;
        expect(refused.status).toBe(status);
        expectKeptAlive(refused);
        // The body the headers announced comes after the answer, is discarded, and the next request is served.
        socket.write(body);
        expect((await healthzOn(socket)).status).toBe(200);
      }
    });

    it('keeps it after a body error (413), saying so, and serves the next request on it', async () => {
      const socket = await open();
      socket.pause();
      const tooLarge = 11 * 1024 * 1024;
      socket.write(
        head('POST', '/v1/chat/completions', {
          authorization: `Bearer ${stack.apiKey}`,
          'content-type': 'application/json',
          'content-length': tooLarge,
        }),
      );
      expect((await writeBody(socket, tooLarge))?.message ?? null).toBeNull();
      const reading = readAnswer(socket);
      socket.resume();
      const answer = await reading;
      expect(answer.status).toBe(413);
      expect(answer.head).toMatch(/\r\nconnection: keep-alive\r\n/i);
      expect((await healthzOn(socket)).status).toBe(200);
    });
  });

  describe('reading deadlines', () => {
    it('cuts a body that trickles with 408 in the error shape', async () => {
      const socket = await open();
      const answer = readAnswer(socket);
      socket.write(
        head('POST', '/v1/chat/completions', {
          authorization: `Bearer ${stack.apiKey}`,
          'content-type': 'application/json',
          'content-length': 1000,
        }),
      );
      const trickle = setInterval(() => {
        if (socket.writable) socket.write(' ');
      }, 200);
      try {
        const cut = await answer;
        expect(cut.status).toBe(408);
        expect(errorOf(cut).code).toBe('request_timeout');
        // Not a refusal of the headers: the body had its time.
        expect(cut.elapsedMs).toBeGreaterThanOrEqual(BODY_TIMEOUT_MS * 0.8);
      } finally {
        clearInterval(trickle);
      }
    });

    it('cuts headers that trickle with 408 in the error shape', async () => {
      const socket = await open();
      const answer = readAnswer(socket);
      socket.write('POST /v1/chat/completions HTTP/1.1\r\nhost: gateway\r\n');
      let n = 0;
      const trickle = setInterval(() => {
        if (socket.writable) socket.write(`x-slow-${n++}: y\r\n`);
      }, 200);
      try {
        const cut = await answer;
        expect(cut.status).toBe(408);
        expect(errorOf(cut).code).toBe('request_timeout');
      } finally {
        clearInterval(trickle);
      }
    });

    it('does not cut a stream that outlives the body deadline', async () => {
      const started = performance.now();
      const res = await stack.post('/v1/chat/completions', {
        model: 'paced-chat',
        stream: true,
        messages: [{ role: 'user', content: Array.from({ length: 60 }, (_, i) => `w${i}`).join(' ') }],
      });
      expect(res.status).toBe(200);
      const events = await collectSse(res.body!);
      expect(performance.now() - started).toBeGreaterThan(BODY_TIMEOUT_MS * 1.5);
      expect(events.at(-1)).toBe('[DONE]');
      expect(events.some((event) => event.includes('"error"'))).toBe(false);
    });
  });

  describe('a 50 MB body', () => {
    it('is a readable 413 for the openai SDK, three at once', async () => {
      const client = new OpenAI({ apiKey: stack.apiKey, baseURL: `${stack.baseUrl}/v1`, maxRetries: 0 });
      const content = 'x'.repeat(FIFTY_MB);
      const outcomes = await Promise.all(
        [1, 2, 3].map(() =>
          client.chat.completions.create({ model: 'sim-chat', messages: [{ role: 'user', content }] }).then(
            () => 'answered',
            (error: unknown) => error,
          ),
        ),
      );
      for (const outcome of outcomes) {
        expect(outcome).toBeInstanceOf(APIError);
        expect((outcome as APIError).status).toBe(413);
        expect((outcome as APIError).code).toBe('request_too_large');
      }
    });

    it('is a readable 413 for a raw client that writes it all before reading', async () => {
      const socket = await open();
      // Nothing is read while the body is written: an answer followed by a reset would be lost.
      socket.pause();
      socket.write(
        head('POST', '/v1/chat/completions', {
          authorization: `Bearer ${stack.apiKey}`,
          'content-type': 'application/json',
          'content-length': FIFTY_MB,
        }),
      );
      const failure = await writeBody(socket, FIFTY_MB);
      expect(failure?.message ?? null).toBeNull();
      const reading = readAnswer(socket);
      socket.resume();
      const answer = await reading;
      expect(answer.status).toBe(413);
      expect(errorOf(answer).code).toBe('request_too_large');
    });

    it('is a readable 401 without a key, for a raw client that writes it all before reading', async () => {
      const socket = await open();
      socket.pause();
      socket.write(
        head('POST', '/v1/chat/completions', {
          'content-type': 'application/json',
          'content-length': FIFTY_MB,
        }),
      );
      const failure = await writeBody(socket, FIFTY_MB);
      expect(failure?.message ?? null).toBeNull();
      const reading = readAnswer(socket);
      socket.resume();
      expect((await reading).status).toBe(401);
    });

    it('has its connection dropped if the rest of the body never comes', async () => {
      const socket = await open();
      const answer = readAnswer(socket);
      socket.write(
        head('POST', '/v1/chat/completions', {
          'content-type': 'application/json',
          'content-length': FIFTY_MB,
        }),
      );
      expect((await answer).status).toBe(401);
      const gaveUp = new AbortController();
      const closed = new Promise<string>((resolve) => socket.once('close', () => resolve('closed')));
      const stillOpen = sleep(30_000, 'open', { signal: gaveUp.signal }).catch(() => 'aborted');
      try {
        await expect(Promise.race([closed, stillOpen])).resolves.toBe('closed');
      } finally {
        gaveUp.abort();
      }
    }, 40_000);
  });

  describe('bodiless requests that say Content-Type: application/json', () => {
    const adminHeaders = { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' };

    async function createKey(name: string): Promise<string> {
      const res = await fetch(`${stack.baseUrl}/admin/keys`, {
        method: 'POST',
        headers: adminHeaders,
        body: JSON.stringify({ name }),
      });
      expect(res.status).toBe(201);
      return ((await res.json()) as { id: string }).id;
    }

    it('revokes a key by DELETE without a body (fetch, no Content-Length)', async () => {
      const id = await createKey('delete-by-fetch');
      const res = await fetch(`${stack.baseUrl}/admin/keys/${id}`, {
        method: 'DELETE',
        headers: adminHeaders,
      });
      expect(res.status).toBe(200);
    });

    it('revokes a key by DELETE with Content-Length: 0', async () => {
      const id = await createKey('delete-by-raw');
      const socket = await open();
      const answer = readAnswer(socket);
      socket.write(head('DELETE', `/admin/keys/${id}`, { ...adminHeaders, 'content-length': 0 }));
      expect((await answer).status).toBe(200);
    });

    it('serves GET /v1/models with Content-Length: 0, and still refuses an empty POST body', async () => {
      const socket = await open();
      const answer = readAnswer(socket);
      socket.write(
        head('GET', '/v1/models', {
          authorization: `Bearer ${stack.apiKey}`,
          'content-type': 'application/json',
          'content-length': 0,
        }),
      );
      expect((await answer).status).toBe(200);
      const empty = await fetch(`${stack.baseUrl}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${stack.apiKey}`, 'content-type': 'application/json' },
      });
      expect(empty.status).toBe(400);
    });
  });
});
