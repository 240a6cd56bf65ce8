import { randomBytes } from 'node:crypto';
import OpenAI from 'openai';
import { chunk, FakeOpenAIUpstream, sendEvent, startStream } from './support/fake-openai-upstream';
import { refusalOf } from './support/refusal';
import { Stack } from './support/stack';
import { waitFor } from './support/wait-for';

const ADMIN_TOKEN = `adm-${randomBytes(16).toString('hex')}`;
const catalogWith = (upstream: FakeOpenAIUpstream) => ({
  models: [
    {
      id: 'up-chat',
      type: 'chat',
      owned_by: 'upstream',
      backend: { kind: 'openai', baseUrl: upstream.baseUrl },
    },
    { id: 'sim-chat', type: 'chat', owned_by: 'model-gateway', backend: { kind: 'simulator', mode: 'echo' } },
    {
      id: 'sim-chat-words',
      type: 'chat',
      owned_by: 'model-gateway',
      backend: { kind: 'simulator', mode: 'words', maxWords: 12 },
    },
    {
      id: 'slow-chat',
      type: 'chat',
      owned_by: 'model-gateway',
      backend: { kind: 'simulator', mode: 'echo', tokensPerSecond: 25 },
    },
  ],
});

/** Enough words for slow-chat to echo for about two seconds. */
const LONG_TEXT = Array.from({ length: 50 }, (_, i) => `word${i}`).join(' ');

/** Stored completions through the official SDK against the real stack (gateway, registry, chat worker). */
describe('stored completions with the openai SDK', () => {
  let stack: Stack;
  let upstream: FakeOpenAIUpstream;

  async function newKey(spec: Record<string, unknown> = {}): Promise<{ key: string; client: OpenAI }> {
    const res = await fetch(`${stack.baseUrl}/admin/keys`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: `stored-${randomBytes(3).toString('hex')}`, ...spec }),
    });
    expect(res.status).toBe(201);
    const { key } = (await res.json()) as { key: string };
    return { key, client: new OpenAI({ apiKey: key, baseURL: `${stack.baseUrl}/v1`, maxRetries: 0 }) };
  }

  async function statusOf(work: Promise<unknown>): Promise<number> {
    return Number((await refusalOf(work, OpenAI.APIError)).status);
  }

  beforeAll(async () => {
    upstream = await FakeOpenAIUpstream.start();
    stack = await Stack.start({
      catalog: catalogWith(upstream),
      env: { GATEWAY_ADMIN_TOKEN: ADMIN_TOKEN },
      without: ['image-worker'],
      waitForModels: ['sim-chat', 'sim-chat-words', 'slow-chat', 'up-chat'],
    });
  });

  afterAll(async () => {
    await stack?.stop();
    await upstream?.stop();
  });

  it('stores a non-streamed completion: retrieve, messages, update, delete', async () => {
    const { client } = await newKey();
    const created = await client.chat.completions.create({
      model: 'sim-chat',
      store: true,
      metadata: { team: 'search', run: '1' },
      messages: [
        { role: 'system', content: 'You are a mirror.' },
        { role: 'user', content: 'Keep this answer for later.' },
      ],
    });
    expect(created.id).toMatch(/^chatcmpl-/);

    const retrieved = await client.chat.completions.retrieve(created.id);
    expect(retrieved).toEqual({ ...created, metadata: { team: 'search', run: '1' } });

    const messages = await client.chat.completions.messages.list(created.id);
    expect(messages.data).toEqual([
      {
        id: `${created.id}-0`,
        role: 'system',
        content: 'You are a mirror.',
        name: null,
        content_parts: null,
      },
      {
        id: `${created.id}-1`,
        role: 'user',
        content: 'Keep this answer for later.',
        name: null,
        content_parts: null,
      },
    ]);
    const newestFirst = await client.chat.completions.messages.list(created.id, { order: 'desc', limit: 1 });
    expect(newestFirst.data.map((m) => m.id)).toEqual([`${created.id}-1`]);
    expect(newestFirst.has_more).toBe(true);

    const updated = await client.chat.completions.update(created.id, { metadata: { team: 'ranking' } });
    expect((updated as typeof updated & { metadata: unknown }).metadata).toEqual({ team: 'ranking' });
    const again = await client.chat.completions.retrieve(created.id);
    expect((again as typeof again & { metadata: unknown }).metadata).toEqual({ team: 'ranking' });

    expect(await client.chat.completions.delete(created.id)).toEqual({
      id: created.id,
      object: 'chat.completion.deleted',
      deleted: true,
    });
    expect(await statusOf(client.chat.completions.retrieve(created.id))).toBe(404);
    expect(await statusOf(client.chat.completions.delete(created.id))).toBe(404);
  });

  it('stores a streamed completion as the stream assembled it, under the id the chunks carried', async () => {
    const { client } = await newKey();
    const stream = await client.chat.completions.create({
      model: 'sim-chat-words',
      stream: true,
      store: true,
      seed: 7,
      messages: [{ role: 'user', content: 'Tell me something.' }],
    });
    let text = '';
    const ids = new Set<string>();
    let usage: OpenAI.CompletionUsage | null | undefined;
    let finish: string | null = null;
    for await (const chunk of stream) {
      ids.add(chunk.id);
      text += chunk.choices[0]?.delta.content ?? '';
      finish = chunk.choices[0]?.finish_reason ?? finish;
      usage = chunk.usage ?? usage;
    }
    expect(ids.size).toBe(1);
    const [id] = [...ids];
    // Fetched at once after [DONE]: the completion is kept before the stream ends.
    const stored = await client.chat.completions.retrieve(id!);
    expect(stored.id).toBe(id);
    expect(stored.object).toBe('chat.completion');
    expect(stored.model).toBe('sim-chat-words');
    expect(stored.choices).toEqual([
      { index: 0, message: { role: 'assistant', content: text }, logprobs: null, finish_reason: finish },
    ]);
    expect(text.length).toBeGreaterThan(0);
    expect(stored.usage).toEqual(usage);
    expect((await client.chat.completions.messages.list(id!)).data.map((m) => m.content)).toEqual([
      'Tell me something.',
    ]);
  });

  it('stores an openai-backend completion without relaying store or metadata upstream', async () => {
    upstream.handle('/v1/chat/completions', async (_request, res) => {
      startStream(res);
      await sendEvent(res, chunk([{ role: 'assistant', content: 'From' }]));
      await sendEvent(res, chunk([{ content: ' upstream.' }]));
      await sendEvent(res, chunk([{ finish_reason: 'stop' }]));
      await sendEvent(res, chunk([], { prompt_tokens: 9, completion_tokens: 2 }));
      await sendEvent(res, '[DONE]');
      res.end();
    });
    const { client } = await newKey();
    const created = await client.chat.completions.create({
      model: 'up-chat',
      store: true,
      metadata: { via: 'upstream' },
      messages: [{ role: 'user', content: 'Relay me.' }],
    });
    const sent = upstream.requests.at(-1)!.body;
    expect(sent.messages).toEqual([{ role: 'user', content: 'Relay me.' }]);
    expect(sent).not.toHaveProperty('store');
    expect(sent).not.toHaveProperty('metadata');
    const stored = await client.chat.completions.retrieve(created.id);
    expect(stored).toEqual({ ...created, metadata: { via: 'upstream' } });
    expect(stored.choices[0]!.message.content).toBe('From upstream.');
    expect(stored.usage).toEqual({ prompt_tokens: 9, completion_tokens: 2, total_tokens: 11 });
  });

  it('lists a key’s completions by creation time with paging, order, model and metadata filters', async () => {
    const { client } = await newKey();
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      const completion = await client.chat.completions.create({
        model: i % 2 === 0 ? 'sim-chat' : 'sim-chat-words',
        store: true,
        metadata: { index: String(i), parity: i % 2 === 0 ? 'even' : 'odd' },
        messages: [{ role: 'user', content: `number ${i}` }],
      });
      ids.push(completion.id);
      // Distinct creation milliseconds, so the expected order is certain.
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    // Not stored: store omitted.
    await client.chat.completions.create({ model: 'sim-chat', messages: [{ role: 'user', content: 'x' }] });

    const first = await client.chat.completions.list({ limit: 2 });
    expect(first.data.map((c) => c.id)).toEqual(ids.slice(0, 2));
    expect(first.has_more).toBe(true);
    const all: string[] = [];
    for await (const completion of client.chat.completions.list({ limit: 2 })) all.push(completion.id);
    expect(all).toEqual(ids);
    const desc: string[] = [];
    for await (const completion of client.chat.completions.list({ limit: 3, order: 'desc' })) {
      desc.push(completion.id);
    }
    expect(desc).toEqual([...ids].reverse());

    const words: string[] = [];
    for await (const c of client.chat.completions.list({ model: 'sim-chat-words', limit: 1 }))
      words.push(c.id);
    expect(words).toEqual([ids[1], ids[3]]);
    const even: Array<Record<string, string>> = [];
    for await (const c of client.chat.completions.list({ metadata: { parity: 'even' }, limit: 2 })) {
      even.push((c as typeof c & { metadata: Record<string, string> }).metadata);
    }
    expect(even).toEqual([
      { index: '0', parity: 'even' },
      { index: '2', parity: 'even' },
      { index: '4', parity: 'even' },
    ]);
    const one = await client.chat.completions.list({
      metadata: { parity: 'odd', index: '3' },
      model: 'sim-chat-words',
    });
    expect(one.data.map((c) => c.id)).toEqual([ids[3]]);
    expect(one.has_more).toBe(false);
  });

  it('shows a key only its own stored completions: another key gets 404, as for an unknown id', async () => {
    const owner = await newKey();
    const other = await newKey();
    const { id } = await owner.client.chat.completions.create({
      model: 'sim-chat',
      store: true,
      messages: [{ role: 'user', content: 'mine' }],
    });
    const unknown = `chatcmpl-${randomBytes(16).toString('hex')}`;
    for (const target of [id, unknown]) {
      expect(await statusOf(other.client.chat.completions.retrieve(target))).toBe(404);
      expect(await statusOf(other.client.chat.completions.messages.list(target))).toBe(404);
      expect(await statusOf(other.client.chat.completions.update(target, { metadata: { x: 'y' } }))).toBe(
        404,
      );
      expect(await statusOf(other.client.chat.completions.delete(target))).toBe(404);
    }
    expect((await other.client.chat.completions.list()).data).toEqual([]);
    // The bootstrap key is another key too.
    const bootstrap = new OpenAI({ apiKey: stack.apiKey, baseURL: `${stack.baseUrl}/v1`, maxRetries: 0 });
    expect(await statusOf(bootstrap.chat.completions.retrieve(id))).toBe(404);
    // The owner still has it, untouched.
    expect((await owner.client.chat.completions.retrieve(id)).id).toBe(id);
  });

  it('refuses bad input with 400s that name the parameter', async () => {
    const { client } = await newKey();
    const seventeen = Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, 'v']));
    const refusals: Array<[() => Promise<unknown>, string]> = [
      [
        () =>
          client.chat.completions.create({
            model: 'sim-chat',
            store: true,
            metadata: { note: 'x'.repeat(513) },
            messages: [{ role: 'user', content: 'hi' }],
          }),
        'metadata',
      ],
      [
        () =>
          client.chat.completions.create({
            model: 'sim-chat',
            store: true,
            metadata: { ['k'.repeat(65)]: 'v' },
            messages: [{ role: 'user', content: 'hi' }],
          }),
        'metadata',
      ],
      [
        () => client.chat.completions.update('chatcmpl-0123456789abcdef', { metadata: seventeen }),
        'metadata',
      ],
      [() => client.chat.completions.retrieve('not-a-completion-id'), 'completion_id'],
      [() => client.chat.completions.list({ limit: 0 }), 'limit'],
      [() => client.chat.completions.list({ limit: 101 }), 'limit'],
      [() => client.chat.completions.list({ after: 'chatcmpl-0123456789abcdef' }), 'after'],
    ];
    for (const [call, param] of refusals) {
      const error = await call().then(
        () => null,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(OpenAI.BadRequestError);
      expect({
        param: (error as InstanceType<typeof OpenAI.APIError>).param,
        type: (error as InstanceType<typeof OpenAI.APIError>).type,
      }).toEqual({
        param,
        type: 'invalid_request_error',
      });
    }
  });

  it('finishes and stores a non-streamed request whose client left, holding the key’s slot until then', async () => {
    const { key, client } = await newKey({ max_concurrent: 1 });
    const run = `gone-${randomBytes(4).toString('hex')}`;
    const controller = new AbortController();
    const leaving = fetch(`${stack.baseUrl}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'slow-chat',
        store: true,
        metadata: { run },
        messages: [{ role: 'user', content: LONG_TEXT }],
      }),
      signal: controller.signal,
    }).catch((error: unknown) => error);
    // Its job running (it alone uses slow-chat here), well before its ~2 s of tokens end.
    await waitFor(
      'the job to run',
      async () => (await stack.redis.llen(`${stack.namespace}:chat.slow-chat:active`)) === 1,
    );
    controller.abort();
    expect(((await leaving) as Error).name).toBe('AbortError');

    // The job goes on: the key's one slot is still taken.
    expect(
      await statusOf(
        client.chat.completions.create({ model: 'sim-chat', messages: [{ role: 'user', content: 'hi' }] }),
      ),
    ).toBe(429);

    const stored = await waitFor(
      'the abandoned completion to be stored',
      async () => (await client.chat.completions.list({ metadata: { run } })).data[0],
      20_000,
    );
    expect(stored.choices[0]!.message.content).toBe(LONG_TEXT);
    expect(stored.choices[0]!.finish_reason).toBe('stop');
    expect(stored.usage!.completion_tokens).toBeGreaterThan(40);
    expect((await client.chat.completions.retrieve(stored.id)).id).toBe(stored.id);

    // Finished, it gave its slot back.
    const next = await waitFor(
      'the slot to come back',
      async () =>
        client.chat.completions
          .create({ model: 'sim-chat', messages: [{ role: 'user', content: 'hi' }] })
          .catch(() => undefined),
      10_000,
    );
    expect(next.object).toBe('chat.completion');
  });
});
