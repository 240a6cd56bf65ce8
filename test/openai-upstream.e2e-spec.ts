import type { ChildProcess } from 'node:child_process';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import sharp from 'sharp';
import { freePort } from './support/free-port';
import {
  chunk,
  FakeOpenAIUpstream,
  json,
  sendEvent,
  startStream,
  streamText,
} from './support/fake-openai-upstream';
import { Stack } from './support/stack';

const UPSTREAM_KEY = 'sk-upstream-e2e-0123456789abcdef';
const CHAT = '/v1/chat/completions';
const SLOW_CHAT = '/slow/v1/chat/completions';
const IMAGES = '/v1/images/generations';

/** Fails with `what` unless `promise` settles within `ms`: a bound on a wait, never a sleep. */
function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

function exitOf(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((resolve) => child.once('exit', (code) => resolve(code)));
}

const solidPng = (width: number, height: number, red: number) =>
  sharp({ create: { width, height, channels: 3, background: { r: red, g: 80, b: 160 } } })
    .png()
    .toBuffer();

/**
 * Models of kind `openai` in front of a scripted OpenAI-compatible server (a real HTTP server in this
 * process), reached through the whole stack with the official client: what the client sees, and what the
 * upstream receives.
 */
describe('the openai backend against an OpenAI-compatible upstream', () => {
  let fake: FakeOpenAIUpstream;
  let stack: Stack;
  let client: OpenAI;

  beforeAll(async () => {
    fake = await FakeOpenAIUpstream.start();
    const deadPort = await freePort();
    const openai = (backend: Record<string, unknown>) => ({
      kind: 'openai',
      baseUrl: fake.baseUrl,
      ...backend,
    });
    stack = await Stack.start({
      catalog: {
        models: [
          {
            id: 'up-chat',
            type: 'chat',
            owned_by: 'upstream',
            backend: openai({
              apiKeyEnv: 'E2E_UPSTREAM_KEY',
              upstreamModel: 'upstream-llama',
              headers: { 'X-Tenant': 'e2e' },
            }),
          },
          {
            id: 'up-slow',
            type: 'chat',
            owned_by: 'upstream',
            backend: openai({ baseUrl: fake.baseUrl.replace(/\/v1$/, '/slow/v1'), timeoutMs: 500 }),
          },
          {
            id: 'up-dead',
            type: 'chat',
            owned_by: 'upstream',
            backend: openai({ baseUrl: `http://127.0.0.1:${deadPort}/v1` }),
          },
          {
            // Its streams are resumable unless a request declines (README "Resumable streams").
            id: 'up-resume',
            type: 'chat',
            owned_by: 'upstream',
            streamResume: 'on',
            backend: openai({ apiKeyEnv: 'E2E_UPSTREAM_KEY', upstreamModel: 'upstream-llama' }),
          },
          {
            id: 'up-missing-key',
            type: 'chat',
            owned_by: 'upstream',
            backend: openai({ apiKeyEnv: 'E2E_UNSET_UPSTREAM_KEY' }),
          },
          {
            id: 'up-image',
            type: 'image',
            owned_by: 'upstream',
            backend: openai({ apiKeyEnv: 'E2E_UPSTREAM_KEY', upstreamModel: 'upstream-diffusion' }),
          },
        ],
      },
      env: { DEFAULT_CHAT_MODEL: 'up-chat', DEFAULT_IMAGE_MODEL: 'up-image' },
      appEnv: {
        'chat-worker': { E2E_UPSTREAM_KEY: UPSTREAM_KEY, WORKER_MODELS: 'up-chat,up-slow,up-dead,up-resume' },
        'image-worker': { E2E_UPSTREAM_KEY: UPSTREAM_KEY },
      },
      waitForModels: ['up-chat', 'up-slow', 'up-dead', 'up-resume', 'up-image'],
    });
    client = new OpenAI({ apiKey: stack.apiKey, baseURL: `${stack.baseUrl}/v1`, maxRetries: 0 });
  });

  afterAll(async () => {
    await stack?.stop();
    await fake?.stop();
  });

  it('relays a stream chunk by chunk as the upstream sends it, with its usage', async () => {
    const pieces = ['Hello', ' from', ' the', ' upstream', '.'];
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    fake.handle(CHAT, async (_request, res) => {
      startStream(res);
      await sendEvent(res, chunk([{ role: 'assistant', content: '' }]));
      await sendEvent(res, chunk([{ content: pieces[0] }]));
      // The rest only once the client holds the first piece: a relay that buffered would never get here.
      await released;
      for (const piece of pieces.slice(1)) await sendEvent(res, chunk([{ content: piece }]));
      await sendEvent(res, chunk([{ finish_reason: 'stop' }]));
      await sendEvent(res, chunk([], { prompt_tokens: 17, completion_tokens: 5 }));
      await sendEvent(res, '[DONE]');
      res.end();
    });

    const stream = await client.chat.completions.create({
      model: 'up-chat',
      stream: true,
      messages: [{ role: 'user', content: 'Say hello.' }],
      temperature: 0.3,
      top_p: 0.9,
      presence_penalty: 0.5,
      frequency_penalty: 0.25,
      max_tokens: 50,
      stop: ['END'],
      seed: 7,
      user: 'user-1',
    });
    const chunks: OpenAI.ChatCompletionChunk[] = [];
    for await (const received of stream) {
      chunks.push(received);
      if (received.choices[0]?.delta.content) release();
    }

    const contents = chunks
      .map((c) => c.choices[0]?.delta.content)
      .filter((c) => c !== undefined && c !== '');
    expect(contents).toEqual(pieces);
    const last = chunks.at(-1)!;
    expect(last.choices[0]!.finish_reason).toBe('stop');
    expect(last.usage).toEqual({ prompt_tokens: 17, completion_tokens: 5, total_tokens: 22 });

    const upstream = fake.last;
    expect(upstream.headers.authorization).toBe(`Bearer ${UPSTREAM_KEY}`);
    expect(upstream.headers['x-tenant']).toBe('e2e');
    expect(upstream.headers.accept).toBe('text/event-stream');
    expect(upstream.body).toEqual({
      model: 'upstream-llama',
      messages: [{ role: 'user', content: 'Say hello.' }],
      stream: true,
      stream_options: { include_usage: true },
      temperature: 0.3,
      top_p: 0.9,
      presence_penalty: 0.5,
      frequency_penalty: 0.25,
      max_tokens: 50,
      stop: ['END'],
      seed: 7,
      user: 'user-1',
    });
  });

  it('answers a non-streaming request with n choices, counting usage the upstream did not send', async () => {
    fake.handle(CHAT, async (_request, res) => {
      startStream(res);
      await sendEvent(
        res,
        chunk([
          { index: 0, role: 'assistant' },
          { index: 1, role: 'assistant' },
        ]),
      );
      await sendEvent(res, chunk([{ index: 0, content: 'Red sky' }]));
      await sendEvent(res, chunk([{ index: 1, content: 'Blue' }]));
      await sendEvent(res, chunk([{ index: 0, content: ' at night.' }]));
      await sendEvent(res, chunk([{ index: 1, content: ' sea', finish_reason: 'length' }]));
      await sendEvent(res, chunk([{ index: 0, finish_reason: 'stop' }]));
      await sendEvent(res, '[DONE]');
      res.end();
    });

    const completion = await client.chat.completions.create({
      model: 'up-chat',
      n: 2,
      messages: [{ role: 'user', content: 'Two colours, please.' }],
    });
    expect(completion.choices.map((c) => [c.index, c.message.content, c.finish_reason])).toEqual([
      [0, 'Red sky at night.', 'stop'],
      [1, 'Blue sea', 'length'],
    ]);
    expect(completion.usage!.prompt_tokens).toBeGreaterThan(0);
    expect(completion.usage!.completion_tokens).toBeGreaterThanOrEqual(4);
    // Parameters at OpenAI's defaults are left to the upstream's own defaults.
    expect(fake.last.body).toEqual({
      model: 'upstream-llama',
      messages: [{ role: 'user', content: 'Two colours, please.' }],
      stream: true,
      stream_options: { include_usage: true },
      n: 2,
    });
  });

  it('reuses its keep-alive connection to the upstream for the next request', async () => {
    fake.handle(CHAT, async (_request, res) => {
      startStream(res);
      await sendEvent(res, chunk([{ content: 'again', finish_reason: 'stop' }]));
      await sendEvent(res, '[DONE]');
      res.end();
    });
    const ask = () =>
      client.chat.completions.create({ model: 'up-chat', messages: [{ role: 'user', content: 'x' }] });
    expect((await ask()).choices[0]!.message.content).toBe('again');
    const first = fake.last;
    expect((await ask()).choices[0]!.message.content).toBe('again');
    expect(fake.last).not.toBe(first);
    expect(fake.last.connection).toBe(first.connection);
  });

  it('relays images as the PNGs the upstream made', async () => {
    const pngs = [await solidPng(256, 256, 200), await solidPng(256, 256, 20)];
    fake.handle(IMAGES, (_request, res) =>
      json(res, 200, {
        created: 1_700_000_000,
        data: pngs.map((png, i) => ({ b64_json: png.toString('base64'), revised_prompt: `lighthouse ${i}` })),
      }),
    );

    const result = await client.images.generate({
      model: 'up-image',
      prompt: 'a lighthouse',
      n: 2,
      size: '256x256',
      user: 'painter',
    });
    expect(result.data!.map((d) => Buffer.from(d.b64_json!, 'base64'))).toEqual(pngs);
    expect(result.data!.map((d) => d.revised_prompt)).toEqual(['lighthouse 0', 'lighthouse 1']);
    expect(fake.last.headers.authorization).toBe(`Bearer ${UPSTREAM_KEY}`);
    expect(fake.last.body).toEqual({
      model: 'upstream-diffusion',
      prompt: 'a lighthouse',
      n: 2,
      size: '256x256',
      response_format: 'b64_json',
      user: 'painter',
    });
  });

  it('refuses an upstream image that is not a PNG, saying so', async () => {
    const jpeg = await sharp({ create: { width: 256, height: 256, channels: 3, background: '#888' } })
      .jpeg()
      .toBuffer();
    fake.handle(IMAGES, (_request, res) => json(res, 200, { data: [{ b64_json: jpeg.toString('base64') }] }));
    const res = await stack.post('/v1/images/generations', {
      model: 'up-image',
      prompt: 'x',
      size: '256x256',
    });
    expect(res.status).toBe(502);
    const body = (await res.json()) as { error: { code: string; message: string } };
    expect(body.error.code).toBe('upstream_protocol_error');
    expect(body.error.message).toContain('JPEG');
  });

  it("passes an upstream validation error on as a 400 with the upstream's message", async () => {
    const message = "This model's maximum context length is 4096 tokens.";
    fake.handle(CHAT, (_request, res) =>
      json(res, 400, { error: { message, type: 'invalid_request_error', param: 'messages', code: null } }),
    );
    const error = await client.chat.completions
      .create({ model: 'up-chat', messages: [{ role: 'user', content: 'long' }] })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect(error).toMatchObject({ status: 400, type: 'invalid_request_error', param: 'messages' });
    expect((error as Error).message).toContain(message);

    fake.handle(CHAT, (_request, res) =>
      json(res, 422, { detail: [{ loc: ['body', 'top_k'], msg: 'Input should be a valid integer' }] }),
    );
    await expect(
      client.chat.completions.create({ model: 'up-chat', messages: [{ role: 'user', content: 'x' }] }),
    ).rejects.toMatchObject({
      status: 400,
      message: expect.stringContaining('Input should be a valid integer'),
    });
  });

  it('turns an upstream auth failure into 502 upstream_auth_error without a trace of the key', async () => {
    fake.handle(CHAT, (_request, res) =>
      json(
        res,
        401,
        { error: { message: `Incorrect API key provided: ${UPSTREAM_KEY}`, code: 'invalid_api_key' } },
        { 'www-authenticate': 'Bearer realm="upstream"' },
      ),
    );
    const res = await stack.post(CHAT, { model: 'up-chat', messages: [{ role: 'user', content: 'x' }] });
    expect(res.status).toBe(502);
    expect(res.headers.get('www-authenticate')).toBeNull();
    const text = await res.text();
    expect(text).not.toContain(UPSTREAM_KEY);
    expect(text).not.toContain('Incorrect API key');
    expect(JSON.parse(text)).toMatchObject({ error: { type: 'server_error', code: 'upstream_auth_error' } });

    fake.handle(CHAT, (_request, res) => json(res, 403, { error: { message: 'forbidden' } }));
    await expect(
      client.chat.completions.create({ model: 'up-chat', messages: [{ role: 'user', content: 'x' }] }),
    ).rejects.toMatchObject({ status: 502, code: 'upstream_auth_error' });
  });

  it('passes an upstream 429 on with its Retry-After', async () => {
    fake.handle(CHAT, (_request, res) =>
      json(res, 429, { error: { message: 'Too many requests, slow down.' } }, { 'retry-after': '7' }),
    );
    const res = await stack.post(CHAT, { model: 'up-chat', messages: [{ role: 'user', content: 'x' }] });
    expect(res.status).toBe(429);
    expect(res.headers.get('retry-after')).toBe('7');
    expect(await res.json()).toMatchObject({
      error: {
        type: 'rate_limit_error',
        code: 'rate_limit_exceeded',
        message: 'Too many requests, slow down.',
      },
    });
  });

  it('turns an upstream 5xx into a 502 that keeps its internals out', async () => {
    fake.handle(CHAT, (_request, res) =>
      json(res, 500, { error: { message: 'CUDA out of memory in /srv/models/secret-path' } }),
    );
    const res = await stack.post(CHAT, { model: 'up-chat', messages: [{ role: 'user', content: 'x' }] });
    expect(res.status).toBe(502);
    const text = await res.text();
    expect(text).not.toContain('CUDA');
    expect(JSON.parse(text)).toMatchObject({ error: { type: 'server_error', code: 'upstream_error' } });
  });

  it('answers 502 when the upstream refuses connections', async () => {
    await expect(
      client.chat.completions.create({ model: 'up-dead', messages: [{ role: 'user', content: 'x' }] }),
    ).rejects.toMatchObject({ status: 502, code: 'upstream_unavailable' });
  });

  it('answers 504 when the upstream stays silent past timeoutMs, and hangs up on it', async () => {
    const arrived = fake.nextRequest();
    fake.handle(SLOW_CHAT, () => undefined); // never answers
    const answer = client.chat.completions
      .create({ model: 'up-slow', messages: [{ role: 'user', content: 'x' }] })
      .catch((e: unknown) => e);
    const request = await within(arrived, 20_000, 'the upstream request');
    expect(request.path).toBe(SLOW_CHAT);
    expect(await answer).toMatchObject({ status: 504, type: 'timeout_error', code: 'upstream_timeout' });
    await within(request.aborted, 10_000, 'the upstream connection to close');
  });

  it('ends a stream with an error when the upstream fails mid-stream', async () => {
    fake.handle(CHAT, async (_request, res) => {
      startStream(res);
      await sendEvent(res, chunk([{ content: 'partial' }]));
      await sendEvent(res, chunk([{ content: ' answer' }]));
      await sendEvent(res, { error: { message: 'engine died', type: 'InternalServerError', code: 500 } });
      res.end();
    });
    const received: string[] = [];
    const read = async () => {
      const stream = await client.chat.completions.create({
        model: 'up-chat',
        stream: true,
        messages: [{ role: 'user', content: 'x' }],
      });
      for await (const c of stream) received.push(c.choices[0]?.delta.content ?? '');
    };
    const error = await read().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.APIError);
    expect((error as Error).message).toContain('engine died');
    expect(received.join('')).toBe('partial answer');

    fake.handle(CHAT, async (_request, res) => {
      startStream(res);
      await sendEvent(res, chunk([{ content: 'cut' }]));
      res.destroy();
    });
    received.length = 0;
    const cut = await read().catch((e: unknown) => e);
    expect(cut).toBeInstanceOf(OpenAI.APIError);
    expect(received.join('')).toBe('cut');
  });

  it('redacts the error an upstream sends inside a 200 stream as it redacts a non-2xx answer', async () => {
    const internals = [
      'http://10.1.2.3:8000/internal',
      '10.1.2.3',
      'sk-secret-',
      'abc123def456',
      '/srv/vllm',
      'engine.py',
    ];
    fake.handle(CHAT, async (_request, res) => {
      startStream(res);
      await sendEvent(res, chunk([{ content: 'partial' }]));
      await sendEvent(res, {
        error: {
          message:
            'KV cache exhausted at http://10.1.2.3:8000/internal with key sk-secret-abc123def456\n' +
            '  File "/srv/vllm/engine.py", line 42, in step',
        },
      });
      res.end();
    });
    const res = await stack.post(CHAT, {
      model: 'up-chat',
      stream: true,
      messages: [{ role: 'user', content: 'x' }],
    });
    expect(res.status).toBe(200);
    const text = await res.text();
    const errors = text
      .split('\n')
      .filter((line) => line.startsWith('data: {"error"'))
      .map((line) => JSON.parse(line.slice('data: '.length)) as { error: { message: string; code: string } });
    expect(errors).toEqual([
      {
        error: expect.objectContaining({
          code: 'upstream_error',
          message:
            'The upstream model server failed during generation: KV cache exhausted at [url] with key [secret]',
        }),
      },
    ]);
    for (const internal of internals) expect(text).not.toContain(internal);
    expect(text.trimEnd().endsWith('data: [DONE]')).toBe(true);
  });

  it('aborts the upstream request when the client goes away', async () => {
    const arrived = fake.nextRequest();
    fake.handle(CHAT, async (_request, res) => {
      startStream(res);
      await sendEvent(res, chunk([{ content: 'first and only' }]));
      // …then hold the stream open, as a model that is still generating.
    });
    const controller = new AbortController();
    // A client that will not resume (`x-stream-resume: off`) is cancelled when it leaves, without the
    // resume grace (README "Resumable streams").
    const stream = await client.chat.completions.create(
      { model: 'up-chat', stream: true, messages: [{ role: 'user', content: 'x' }] },
      { signal: controller.signal, headers: { 'x-stream-resume': 'off' } },
    );
    const request = await within(arrived, 20_000, 'the upstream request');
    for await (const received of stream) {
      if (received.choices[0]?.delta.content) break; // leaving the loop aborts the HTTP request
    }
    controller.abort();
    await within(request.aborted, 5_000, 'the upstream to see its request aborted');
  });

  /**
   * A stream whose upstream holds on after its first chunk, opened through the gateway by the official
   * SDK (which never resumes), read to that chunk and left. Resolves with the upstream request and the
   * moment the client left; `socketClosed` says when the upstream saw its connection close.
   */
  async function leaveAfterFirstChunk(
    model: string,
    headers: Record<string, string> = {},
  ): Promise<{ leftAt: number; socketClosed: Promise<number> }> {
    const arrived = fake.nextRequest();
    let socketClosed!: Promise<number>;
    fake.handle(CHAT, async (_request, res) => {
      socketClosed = new Promise((resolve) => res.socket!.once('close', () => resolve(Date.now())));
      startStream(res);
      await sendEvent(res, chunk([{ content: 'first and only' }]));
      // …then hold the stream open, as a model that is still generating.
    });
    const controller = new AbortController();
    const stream = await client.chat.completions.create(
      { model, stream: true, messages: [{ role: 'user', content: 'x' }] },
      { signal: controller.signal, headers },
    );
    await within(arrived, 20_000, 'the upstream request');
    for await (const received of stream) {
      if (received.choices[0]?.delta.content) break;
    }
    controller.abort();
    return { leftAt: Date.now(), socketClosed };
  }

  it('closes the upstream connection within 2 s of a client leaving, when nothing asked for resume', async () => {
    const { leftAt, socketClosed } = await leaveAfterFirstChunk('up-chat');
    const closedAt = await within(socketClosed, 2_000, 'the upstream socket to close');
    expect(closedAt - leftAt).toBeLessThan(2_000);
  });

  it("keeps a stream running for the resume grace when its model's catalog default is on, unless the client declines", async () => {
    const kept = await leaveAfterFirstChunk('up-resume');
    const early = await Promise.race([
      kept.socketClosed.then(() => 'closed'),
      new Promise((resolve) => setTimeout(resolve, 2_500, 'open')),
    ]);
    expect(early).toBe('open');

    const declined = await leaveAfterFirstChunk('up-resume', { 'x-stream-resume': 'off' });
    const closedAt = await within(
      declined.socketClosed,
      2_000,
      'the declined stream’s upstream socket to close',
    );
    expect(closedAt - declined.leftAt).toBeLessThan(2_000);
  });

  it('answers a non-streaming answer past the 16 Mi-character bound with a 502 and cancels its job at once', async () => {
    // An upstream that would go on to 4× the bound (a model generating to its max_tokens): the job must be
    // stopped long before, as soon as the gateway refuses the answer.
    const BOUND = 16 * 1024 * 1024;
    const piece = 'y'.repeat(64 * 1024);
    let sent = 0;
    let finished = false;
    const arrived = fake.nextRequest();
    fake.handle(CHAT, async (_request, res) => {
      let closed = false;
      res.once('close', () => (closed = true));
      startStream(res);
      while (!closed && sent < 4 * BOUND) {
        await sendEvent(res, chunk([{ content: piece }]));
        sent += piece.length;
      }
      if (closed) return;
      await sendEvent(
        res,
        chunk([{ content: '', finish_reason: 'length' }], { prompt_tokens: 1, completion_tokens: 1 }),
      );
      await sendEvent(res, '[DONE]');
      res.end();
      finished = true;
    });
    const res = await stack.post(CHAT, { model: 'up-chat', messages: [{ role: 'user', content: 'a lot' }] });
    expect(res.status).toBe(502);
    expect(((await res.json()) as { error: { message: string } }).error.message).toContain(
      'a non-streaming response may hold',
    );
    const request = await within(arrived, 5_000, 'the upstream request');
    await within(request.aborted, 30_000, 'the upstream request to be aborted');
    expect(finished).toBe(false);
    // The job stopped about where the gateway refused it, nowhere near the end of what was coming.
    expect(sent).toBeGreaterThan(BOUND);
    expect(sent).toBeLessThan(2 * BOUND);
  }, 60_000);

  it('stops a worker at start when the variable holding an upstream key is missing', async () => {
    const worker = stack.spawnExtra('chat-worker:missing-key', { WORKER_MODELS: 'up-missing-key' });
    expect(await within(exitOf(worker), 30_000, 'the worker to exit')).toBe(78);
    const logs = stack.logs('chat-worker:missing-key');
    expect(logs).toContain('catalog model "up-missing-key"');
    expect(logs).toContain('backend.apiKeyEnv');
    expect(logs).toContain('E2E_UNSET_UPSTREAM_KEY');
  });

  /**
   * The Responses and Messages APIs on the same backend: the gateway translates both ways to the Chat
   * Completions its upstream speaks, what the client sees and what the upstream receives.
   */
  describe('the Responses and Messages APIs', () => {
    let anthropic: Anthropic;
    const WEATHER_PARAMETERS = {
      type: 'object' as const,
      properties: { city: { type: 'string' } },
      required: ['city'],
      additionalProperties: false,
    };
    /** Fragments of `{"city":"Oslo"}` as an upstream streams them, in pieces that split keys and values. */
    const ARGUMENT_PIECES = ['{"ci', 'ty":', '"Os', 'lo"}'];
    // An address no resolver answers: a gateway that fetched it would fail, not relay it.
    const IMAGE_URL = 'https://images.example.invalid/cat.png';

    beforeAll(() => {
      anthropic = new Anthropic({ apiKey: stack.apiKey, baseURL: stack.baseUrl, maxRetries: 0 });
    });

    /** An upstream answering with `pieces` of text, then `finish` and usage 11 / pieces.length. */
    function answerText(pieces: readonly string[], finish = 'stop'): void {
      fake.handle(CHAT, (_request, res) => streamText(res, pieces, finish));
    }

    /** An upstream calling get_weather: the call's id and name first, then its arguments over several chunks. */
    function answerToolCall(): void {
      fake.handle(CHAT, async (_request, res) => {
        startStream(res);
        await sendEvent(res, chunk([{ role: 'assistant', content: null }]));
        await sendEvent(
          res,
          chunk([
            {
              tool_calls: [
                {
                  index: 0,
                  id: 'call_w1',
                  type: 'function',
                  function: { name: 'get_weather', arguments: '' },
                },
              ],
            },
          ]),
        );
        for (const piece of ARGUMENT_PIECES) {
          await sendEvent(res, chunk([{ tool_calls: [{ index: 0, function: { arguments: piece } }] }]));
        }
        await sendEvent(res, chunk([{ finish_reason: 'tool_calls' }]));
        await sendEvent(res, chunk([], { prompt_tokens: 40, completion_tokens: 9 }));
        await sendEvent(res, '[DONE]');
        res.end();
      });
    }

    /** The chat messages the upstream received last. */
    const upstreamMessages = () => fake.last.body.messages as Array<Record<string, unknown>>;

    it('answers responses.create and responses.stream with the upstream text and its usage', async () => {
      answerText(['Hello', ' from', ' upstream.']);
      const response = await client.responses.create({
        model: 'up-chat',
        instructions: 'Be brief.',
        input: 'Say hello.',
        max_output_tokens: 30,
        temperature: 0.2,
      });
      expect(response).toMatchObject({
        status: 'completed',
        model: 'up-chat',
        output_text: 'Hello from upstream.',
      });
      expect(response.usage).toMatchObject({ input_tokens: 11, output_tokens: 3, total_tokens: 14 });
      expect(fake.last.body).toMatchObject({
        model: 'upstream-llama',
        messages: [
          { role: 'system', content: 'Be brief.' },
          { role: 'user', content: 'Say hello.' },
        ],
        max_tokens: 30,
        temperature: 0.2,
      });

      answerText(['One', ' two', ' three'], 'length');
      const stream = client.responses.stream({ model: 'up-chat', input: 'Count.', max_output_tokens: 16 });
      const events: Array<{ type: string; sequence_number: number }> = [];
      const deltas: string[] = [];
      for await (const event of stream) {
        events.push(event);
        if (event.type === 'response.output_text.delta') deltas.push(event.delta);
      }
      const final = await stream.finalResponse();
      expect(deltas).toEqual(['One', ' two', ' three']);
      expect(events.map((e) => e.sequence_number)).toEqual(events.map((_, i) => i));
      expect(events.at(-1)!.type).toBe('response.incomplete');
      expect(final).toMatchObject({
        status: 'incomplete',
        incomplete_details: { reason: 'max_output_tokens' },
        output_text: 'One two three',
      });
      expect(final.usage).toMatchObject({ input_tokens: 11, output_tokens: 3 });
    });

    it('streams a function call from upstream tool-call deltas, then sends its output upstream as a tool message', async () => {
      answerToolCall();
      const tools = [
        { type: 'function' as const, name: 'get_weather', parameters: WEATHER_PARAMETERS, strict: true },
      ];
      const stream = client.responses.stream({ model: 'up-chat', input: 'Weather in Oslo?', tools });
      const argumentDeltas: string[] = [];
      const types: string[] = [];
      let done: string | undefined;
      for await (const event of stream) {
        types.push(event.type);
        if (event.type === 'response.function_call_arguments.delta') argumentDeltas.push(event.delta);
        if (event.type === 'response.function_call_arguments.done') done = event.arguments;
      }
      const first = await stream.finalResponse();
      expect(argumentDeltas).toEqual(ARGUMENT_PIECES);
      expect(done).toBe('{"city":"Oslo"}');
      expect(types.indexOf('response.output_item.added')).toBeLessThan(
        types.indexOf('response.function_call_arguments.delta'),
      );
      expect(types.slice(-3)).toEqual([
        'response.function_call_arguments.done',
        'response.output_item.done',
        'response.completed',
      ]);
      const call = first.output.find((item) => item.type === 'function_call');
      if (call?.type !== 'function_call') throw new Error('no function_call item');
      expect(call).toMatchObject({ name: 'get_weather', arguments: '{"city":"Oslo"}', status: 'completed' });
      expect(first.usage).toMatchObject({ input_tokens: 40, output_tokens: 9 });
      expect(fake.last.body).toMatchObject({
        tools: [
          {
            type: 'function',
            function: { name: 'get_weather', parameters: WEATHER_PARAMETERS, strict: true },
          },
        ],
        tool_choice: 'auto',
      });

      answerText(['Sunny', ' in Oslo.']);
      const second = await client.responses.create({
        model: 'up-chat',
        previous_response_id: first.id,
        input: [{ type: 'function_call_output', call_id: call.call_id, output: 'sunny, 21 C' }],
        tools,
      });
      expect(second.output_text).toBe('Sunny in Oslo.');
      expect(upstreamMessages()).toEqual([
        { role: 'user', content: 'Weather in Oslo?' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [
            {
              id: call.call_id,
              type: 'function',
              function: { name: 'get_weather', arguments: '{"city":"Oslo"}' },
            },
          ],
        },
        { role: 'tool', tool_call_id: call.call_id, content: 'sunny, 21 C' },
      ]);
    });

    it('answers messages.create and messages.stream with the upstream text, stop reason and usage', async () => {
      answerText(['Hello', ' there.']);
      const message = await anthropic.messages.create({
        model: 'up-chat',
        max_tokens: 40,
        system: 'Be brief.',
        messages: [{ role: 'user', content: 'Say hello.' }],
      });
      expect(message).toMatchObject({
        type: 'message',
        role: 'assistant',
        model: 'up-chat',
        content: [{ type: 'text', text: 'Hello there.' }],
        stop_reason: 'end_turn',
        usage: { input_tokens: 11, output_tokens: 2 },
      });
      expect(fake.last.body).toMatchObject({
        messages: [
          { role: 'system', content: 'Be brief.' },
          { role: 'user', content: 'Say hello.' },
        ],
        max_tokens: 40,
      });

      answerText(['A', ' long', ' story'], 'length');
      const stream = anthropic.messages.stream({
        model: 'up-chat',
        max_tokens: 3,
        messages: [{ role: 'user', content: 'Tell a story.' }],
      });
      const deltas: string[] = [];
      stream.on('text', (text) => deltas.push(text));
      const streamed = await stream.finalMessage();
      expect(deltas).toEqual(['A', ' long', ' story']);
      expect(streamed.content).toEqual([{ type: 'text', text: 'A long story' }]);
      expect(streamed.stop_reason).toBe('max_tokens');
      expect(streamed.usage).toMatchObject({ input_tokens: 11, output_tokens: 3 });
    });

    it('streams a tool_use block from upstream tool-call deltas, then sends the tool_result upstream as a tool message', async () => {
      answerToolCall();
      const tools = [
        { name: 'get_weather', description: 'Weather of a city', input_schema: WEATHER_PARAMETERS },
      ];
      const question: Anthropic.MessageParam = { role: 'user', content: 'Weather in Oslo?' };
      const stream = anthropic.messages.stream({
        model: 'up-chat',
        max_tokens: 100,
        tools,
        messages: [question],
      });
      const partials: string[] = [];
      const starts: unknown[] = [];
      stream.on('streamEvent', (event) => {
        if (event.type === 'content_block_start') starts.push(event.content_block);
        if (event.type === 'content_block_delta' && event.delta.type === 'input_json_delta') {
          partials.push(event.delta.partial_json);
        }
      });
      const first = await stream.finalMessage();
      expect(starts).toEqual([
        { type: 'tool_use', id: expect.stringMatching(/^toolu_/), name: 'get_weather', input: {} },
      ]);
      expect(partials).toEqual(ARGUMENT_PIECES);
      expect(JSON.parse(partials.join(''))).toEqual({ city: 'Oslo' });
      expect(first.stop_reason).toBe('tool_use');
      expect(first.usage).toMatchObject({ input_tokens: 40, output_tokens: 9 });
      const use = first.content.find((block) => block.type === 'tool_use');
      if (use?.type !== 'tool_use') throw new Error('no tool_use block');
      expect(use).toMatchObject({ name: 'get_weather', input: { city: 'Oslo' } });
      expect(fake.last.body).toMatchObject({
        tools: [{ type: 'function', function: { name: 'get_weather', parameters: WEATHER_PARAMETERS } }],
      });

      answerText(['Sunny', ' in Oslo.']);
      const answer = await anthropic.messages.create({
        model: 'up-chat',
        max_tokens: 100,
        tools,
        messages: [
          question,
          { role: 'assistant', content: first.content },
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: 'sunny, 21 C' }] },
        ],
      });
      expect(answer.content).toEqual([{ type: 'text', text: 'Sunny in Oslo.' }]);
      expect(upstreamMessages()).toEqual([
        { role: 'user', content: 'Weather in Oslo?' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [
            { id: use.id, type: 'function', function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } },
          ],
        },
        { role: 'tool', tool_call_id: use.id, content: 'sunny, 21 C' },
      ]);
    });

    it("maps an upstream 400 and 500 to each protocol's error shape", async () => {
      const message = "This model's maximum context length is 4096 tokens.";
      fake.handle(CHAT, (_request, res) =>
        json(res, 400, { error: { message, type: 'invalid_request_error', param: 'messages', code: null } }),
      );
      const responses400 = await client.responses
        .create({ model: 'up-chat', input: 'long' })
        .catch((e: unknown) => e);
      expect(responses400).toBeInstanceOf(OpenAI.BadRequestError);
      expect(responses400).toMatchObject({ status: 400, type: 'invalid_request_error' });
      expect((responses400 as Error).message).toContain(message);
      const messages400 = await anthropic.messages
        .create({ model: 'up-chat', max_tokens: 10, messages: [{ role: 'user', content: 'long' }] })
        .catch((e: unknown) => e);
      expect(messages400).toBeInstanceOf(Anthropic.BadRequestError);
      expect(messages400).toMatchObject({
        status: 400,
        error: {
          type: 'error',
          error: { type: 'invalid_request_error', message: expect.stringContaining(message) },
        },
      });

      fake.handle(CHAT, (_request, res) =>
        json(res, 500, { error: { message: 'CUDA out of memory in /srv/models/secret-path' } }),
      );
      const responses500 = await client.responses
        .create({ model: 'up-chat', input: 'x' })
        .catch((e: unknown) => e);
      expect(responses500).toBeInstanceOf(OpenAI.APIError);
      expect(responses500).toMatchObject({ status: 502, type: 'server_error', code: 'upstream_error' });
      expect((responses500 as Error).message).not.toContain('CUDA');
      const messages500 = await anthropic.messages
        .create({ model: 'up-chat', max_tokens: 10, messages: [{ role: 'user', content: 'x' }] })
        .catch((e: unknown) => e);
      expect(messages500).toBeInstanceOf(Anthropic.InternalServerError);
      expect(messages500).toMatchObject({
        status: 502,
        error: { type: 'error', error: { type: 'api_error' } },
      });
      expect((messages500 as Error).message).not.toContain('CUDA');

      // A stream opens before its job runs (its model has no fallbacks), so the same refusal arrives inside
      // the 200: Responses' `error` event, which the SDK raises, then `response.failed`; Anthropic's `error`.
      fake.handle(CHAT, (_request, res) =>
        json(res, 400, { error: { message, type: 'invalid_request_error', param: 'messages', code: null } }),
      );
      const events: string[] = [];
      const streamed400 = await (async () => {
        for await (const event of client.responses.stream({ model: 'up-chat', input: 'long' })) {
          events.push(event.type);
        }
      })().catch((e: unknown) => e);
      expect(streamed400).toBeInstanceOf(OpenAI.APIError);
      expect((streamed400 as Error).message).toContain(message);
      expect(events).toEqual(['response.created', 'response.in_progress']);
      const raw = await stack.post('/v1/responses', { model: 'up-chat', input: 'long', stream: true });
      const named = (await raw.text()).split('\n').filter((line) => line.startsWith('event: '));
      expect(named.slice(-2)).toEqual(['event: error', 'event: response.failed']);
      const streamedMessages400 = await anthropic.messages
        .stream({ model: 'up-chat', max_tokens: 10, messages: [{ role: 'user', content: 'long' }] })
        .finalMessage()
        .catch((e: unknown) => e);
      expect(streamedMessages400).toBeInstanceOf(Anthropic.APIError);
      expect(streamedMessages400).toMatchObject({
        error: {
          type: 'error',
          error: { type: 'invalid_request_error', message: expect.stringContaining(message) },
        },
      });
    });

    it('keeps text and two tool calls of one upstream answer apart and in order, on both routes', async () => {
      // Text first, then two calls one after the other, each call's id and name with its first fragment.
      fake.handle(CHAT, async (_request, res) => {
        startStream(res);
        await sendEvent(res, chunk([{ role: 'assistant', content: 'Checking' }]));
        await sendEvent(res, chunk([{ content: ' both.' }]));
        for (const [index, city] of ['Oslo', 'Rome'].entries()) {
          const id = `call_p${index}`;
          const name = 'get_weather';
          await sendEvent(
            res,
            chunk([
              { tool_calls: [{ index, id, type: 'function', function: { name, arguments: '{"city":' } }] },
            ]),
          );
          await sendEvent(res, chunk([{ tool_calls: [{ index, function: { arguments: `"${city}"}` } }] }]));
        }
        await sendEvent(
          res,
          chunk([{ finish_reason: 'tool_calls' }], { prompt_tokens: 30, completion_tokens: 20 }),
        );
        await sendEvent(res, '[DONE]');
        res.end();
      });
      const tools = [
        { type: 'function' as const, name: 'get_weather', parameters: WEATHER_PARAMETERS, strict: true },
      ];
      const stream = client.responses.stream({ model: 'up-chat', input: 'Oslo and Rome?', tools });
      const added: string[] = [];
      for await (const event of stream)
        if (event.type === 'response.output_item.added') added.push(event.item.type);
      const response = await stream.finalResponse();
      expect(added).toEqual(['message', 'function_call', 'function_call']);
      expect(response.output_text).toBe('Checking both.');
      expect(response.output.slice(1)).toEqual([
        expect.objectContaining({ type: 'function_call', call_id: 'call_p0', arguments: '{"city":"Oslo"}' }),
        expect.objectContaining({ type: 'function_call', call_id: 'call_p1', arguments: '{"city":"Rome"}' }),
      ]);

      const anthropicTools = [{ name: 'get_weather', input_schema: WEATHER_PARAMETERS }];
      const question: Anthropic.MessageParam = { role: 'user', content: 'Oslo and Rome?' };
      for (const streamed of [false, true]) {
        const message = streamed
          ? await anthropic.messages
              .stream({ model: 'up-chat', max_tokens: 100, tools: anthropicTools, messages: [question] })
              .finalMessage()
          : await anthropic.messages.create({
              model: 'up-chat',
              max_tokens: 100,
              tools: anthropicTools,
              messages: [question],
            });
        expect(message.stop_reason).toBe('tool_use');
        expect(message.content).toEqual([
          { type: 'text', text: 'Checking both.' },
          { type: 'tool_use', id: 'toolu_p0', name: 'get_weather', input: { city: 'Oslo' } },
          { type: 'tool_use', id: 'toolu_p1', name: 'get_weather', input: { city: 'Rome' } },
        ]);
      }
    });

    it('ends a stream whose upstream fails mid-answer with each protocol’s error, redacted', async () => {
      fake.handle(CHAT, async (_request, res) => {
        startStream(res);
        await sendEvent(res, chunk([{ content: 'partial' }]));
        await sendEvent(res, { error: { message: 'KV cache exhausted at http://10.1.2.3:8000/internal' } });
        res.end();
      });
      const expected = 'The upstream model server failed during generation: KV cache exhausted at [url]';
      const responses = await stack.post('/v1/responses', { model: 'up-chat', input: 'x', stream: true });
      expect(responses.status).toBe(200);
      const responsesText = await responses.text();
      expect(responsesText).not.toContain('10.1.2.3');
      const responsesEvents = responsesText
        .split('\n')
        .filter((line) => line.startsWith('data: '))
        .map((line) => JSON.parse(line.slice('data: '.length)) as { type: string; [field: string]: unknown });
      expect(responsesEvents.map((e) => e.type)).toContain('response.output_text.delta');
      expect(responsesEvents.slice(-2)).toEqual([
        expect.objectContaining({ type: 'error', code: 'upstream_error', message: expected }),
        expect.objectContaining({
          type: 'response.failed',
          response: expect.objectContaining({
            status: 'failed',
            error: { code: 'upstream_error', message: expected },
          }) as unknown,
        }),
      ]);

      const stream = anthropic.messages.stream({
        model: 'up-chat',
        max_tokens: 20,
        messages: [{ role: 'user', content: 'x' }],
      });
      const deltas: string[] = [];
      stream.on('text', (text) => deltas.push(text));
      const failure = await stream.finalMessage().catch((e: unknown) => e);
      expect(deltas).toEqual(['partial']);
      expect(failure).toBeInstanceOf(Anthropic.APIError);
      expect(failure).toMatchObject({
        error: { type: 'error', error: { type: 'api_error', message: expected } },
      });
    });

    it("relays each protocol's settings to the upstream in Chat Completions' words", async () => {
      answerText(['{"city":"Oslo"}']);
      const schema = { ...WEATHER_PARAMETERS, $schema: 'http://json-schema.org/draft-07/schema#' };
      const response = await client.responses.create({
        model: 'up-chat',
        input: [
          { role: 'developer', content: 'Answer in JSON.' },
          { role: 'user', content: 'Weather?' },
        ],
        text: { format: { type: 'json_schema', name: 'weather', schema, strict: true } },
        top_p: 0.5,
        tools: [{ type: 'function', name: 'get_weather', parameters: WEATHER_PARAMETERS, strict: true }],
        tool_choice: { type: 'function', name: 'get_weather' },
        parallel_tool_calls: false,
      });
      expect(response.output_text).toBe('{"city":"Oslo"}');
      expect(fake.last.body).toMatchObject({
        messages: [
          { role: 'system', content: 'Answer in JSON.' },
          { role: 'user', content: 'Weather?' },
        ],
        top_p: 0.5,
        response_format: {
          type: 'json_schema',
          json_schema: { name: 'weather', schema: WEATHER_PARAMETERS, strict: true },
        },
        tool_choice: { type: 'function', function: { name: 'get_weather' } },
        parallel_tool_calls: false,
      });

      answerText(['ok']);
      await anthropic.messages.create({
        model: 'up-chat',
        max_tokens: 20,
        stop_sequences: ['END'],
        tools: [{ name: 'get_weather', input_schema: WEATHER_PARAMETERS }],
        tool_choice: { type: 'any', disable_parallel_tool_use: true },
        messages: [{ role: 'user', content: 'Weather?' }],
      });
      expect(fake.last.body).toMatchObject({
        max_tokens: 20,
        stop: ['END'],
        tool_choice: 'required',
        parallel_tool_calls: false,
      });
    });

    it('translates an upstream that answers with one JSON completion instead of a stream, tool calls included', async () => {
      fake.handle(CHAT, (_request, res) =>
        json(res, 200, {
          id: 'chatcmpl-whole',
          object: 'chat.completion',
          created: 1_700_000_000,
          model: 'upstream-llama',
          choices: [
            {
              index: 0,
              message: {
                role: 'assistant',
                content: 'Looking it up.',
                tool_calls: [
                  {
                    id: 'call_j1',
                    type: 'function',
                    function: { name: 'get_weather', arguments: '{"city":"Oslo"}' },
                  },
                ],
              },
              finish_reason: 'tool_calls',
            },
          ],
          usage: { prompt_tokens: 21, completion_tokens: 8, total_tokens: 29 },
        }),
      );
      const response = await client.responses.create({
        model: 'up-chat',
        input: 'Weather in Oslo?',
        tools: [{ type: 'function', name: 'get_weather', parameters: WEATHER_PARAMETERS, strict: true }],
      });
      expect(response.output_text).toBe('Looking it up.');
      expect(response.output[1]).toMatchObject({
        type: 'function_call',
        call_id: 'call_j1',
        name: 'get_weather',
        arguments: '{"city":"Oslo"}',
      });
      expect(response.usage).toMatchObject({ input_tokens: 21, output_tokens: 8 });

      const stream = anthropic.messages.stream({
        model: 'up-chat',
        max_tokens: 50,
        tools: [{ name: 'get_weather', input_schema: WEATHER_PARAMETERS }],
        messages: [{ role: 'user', content: 'Weather in Oslo?' }],
      });
      const message = await stream.finalMessage();
      expect(message.content).toEqual([
        { type: 'text', text: 'Looking it up.' },
        { type: 'tool_use', id: 'toolu_j1', name: 'get_weather', input: { city: 'Oslo' } },
      ]);
      expect(message.stop_reason).toBe('tool_use');
      expect(message.usage).toMatchObject({ input_tokens: 21, output_tokens: 8 });
    });

    it('relays an image URL to the upstream as the URL, without fetching it, on both routes', async () => {
      answerText(['A cat.']);
      const response = await client.responses.create({
        model: 'up-chat',
        input: [
          {
            role: 'user',
            content: [
              { type: 'input_text', text: 'What is this?' },
              { type: 'input_image', image_url: IMAGE_URL, detail: 'low' },
            ],
          },
        ],
      });
      expect(response.output_text).toBe('A cat.');
      expect(upstreamMessages()).toEqual([
        {
          role: 'user',
          content: [
            { type: 'text', text: 'What is this?' },
            { type: 'image_url', image_url: { url: IMAGE_URL, detail: 'low' } },
          ],
        },
      ]);

      answerText(['A cat.']);
      const message = await anthropic.messages.create({
        model: 'up-chat',
        max_tokens: 20,
        messages: [
          {
            role: 'user',
            content: [
              { type: 'image', source: { type: 'url', url: IMAGE_URL } },
              { type: 'text', text: 'What is this?' },
            ],
          },
        ],
      });
      expect(message.content).toEqual([{ type: 'text', text: 'A cat.' }]);
      expect(upstreamMessages()).toEqual([
        {
          role: 'user',
          content: [
            { type: 'image_url', image_url: { url: IMAGE_URL } },
            { type: 'text', text: 'What is this?' },
          ],
        },
      ]);
    });
  });
});
