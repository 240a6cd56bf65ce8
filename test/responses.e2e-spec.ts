import { randomBytes } from 'node:crypto';
import OpenAI from 'openai';
import { zodTextFormat } from 'openai/helpers/zod';
import { z } from 'zod';
import { freePort } from './support/free-port';
import { refusalOf } from './support/refusal';
import { Stack } from './support/stack';
import { waitFor } from './support/wait-for';

const ADMIN_TOKEN = `adm-${randomBytes(16).toString('hex')}`;
const CATALOG = {
  models: [
    { id: 'sim-chat', type: 'chat', owned_by: 'model-gateway', backend: { kind: 'simulator', mode: 'echo' } },
    {
      id: 'slow-chat',
      type: 'chat',
      owned_by: 'model-gateway',
      backend: { kind: 'simulator', mode: 'echo', tokensPerSecond: 40 },
    },
    {
      id: 'tiny-chat',
      type: 'chat',
      owned_by: 'model-gateway',
      contextTokens: 16,
      backend: { kind: 'simulator', mode: 'echo' },
    },
  ],
};
/** Enough words for slow-chat to echo for about a second and a half. */
const LONG_TEXT = Array.from({ length: 60 }, (_, i) => `word${i}`).join(' ');
/** About seven seconds of slow-chat: longer than a gateway's drain takes to cut its connections. */
const LONGER_TEXT = Array.from({ length: 280 }, (_, i) => `word${i}`).join(' ');
const WEATHER_TOOL = {
  type: 'function' as const,
  name: 'get_weather',
  description: 'The weather in a city.',
  strict: true,
  parameters: {
    type: 'object',
    properties: { city: { type: 'string' } },
    required: ['city'],
    additionalProperties: false,
  },
};

/** The Responses API through the official SDK against the real stack (gateway, registry, chat worker). */
describe('the Responses API with the openai SDK', () => {
  let stack: Stack;
  let client: OpenAI;

  async function newClient(): Promise<OpenAI> {
    const res = await fetch(`${stack.baseUrl}/admin/keys`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: `responses-${randomBytes(3).toString('hex')}` }),
    });
    expect(res.status).toBe(201);
    const { key } = (await res.json()) as { key: string };
    return new OpenAI({ apiKey: key, baseURL: `${stack.baseUrl}/v1`, maxRetries: 0 });
  }

  beforeAll(async () => {
    stack = await Stack.start({
      catalog: CATALOG,
      env: { GATEWAY_ADMIN_TOKEN: ADMIN_TOKEN },
      without: ['image-worker'],
      waitForModels: ['sim-chat', 'slow-chat', 'tiny-chat'],
    });
    client = new OpenAI({ apiKey: stack.apiKey, baseURL: `${stack.baseUrl}/v1`, maxRetries: 0 });
  });

  afterAll(async () => {
    await stack?.stop();
  });

  it('creates, retrieves, lists input items and deletes a stored response', async () => {
    const response = await client.responses.create({
      model: 'sim-chat',
      instructions: 'You are a mirror.',
      input: 'Reflect this sentence back.',
      metadata: { run: '1' },
    });
    expect(response).toMatchObject({
      object: 'response',
      status: 'completed',
      model: 'sim-chat',
      instructions: 'You are a mirror.',
      metadata: { run: '1' },
      store: true,
      error: null,
      incomplete_details: null,
    });
    expect(response.id).toMatch(/^resp_/);
    expect(response.output_text).toBe('Reflect this sentence back.');
    expect(response.output[0]).toMatchObject({ type: 'message', role: 'assistant', status: 'completed' });
    expect(response.usage).toMatchObject({
      input_tokens: expect.any(Number),
      output_tokens: expect.any(Number),
    });
    expect(response.usage!.total_tokens).toBe(response.usage!.input_tokens + response.usage!.output_tokens);

    const fetched = await client.responses.retrieve(response.id);
    expect(fetched).toEqual(response);
    const items = await client.responses.inputItems.list(response.id);
    expect(items.data).toEqual([
      expect.objectContaining({ type: 'message', role: 'user', content: 'Reflect this sentence back.' }),
    ]);
    // Another key learns nothing of it.
    const other = await newClient();
    expect((await refusalOf(other.responses.retrieve(response.id), OpenAI.APIError)).status).toBe(404);
    expect((await refusalOf(other.responses.delete(response.id), OpenAI.APIError)).status).toBe(404);

    await client.responses.delete(response.id);
    expect((await refusalOf(client.responses.retrieve(response.id), OpenAI.APIError)).status).toBe(404);
  });

  it('streams the events in order with sequence numbers from 0, then the final response', async () => {
    const stream = client.responses.stream({ model: 'sim-chat', input: 'Stream a few words back please.' });
    const events: Array<{ type: string; sequence_number: number }> = [];
    for await (const event of stream) events.push(event);
    const final = await stream.finalResponse();
    expect(final.output_text).toBe('Stream a few words back please.');
    expect(events.map((e) => e.sequence_number)).toEqual(events.map((_, i) => i));
    const types = events.map((e) => e.type);
    expect(types.slice(0, 4)).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.content_part.added',
    ]);
    expect(types).toContain('response.output_text.delta');
    expect(types.slice(-4)).toEqual([
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.completed',
    ]);
    expect((await client.responses.retrieve(final.id)).status).toBe('completed');
  });

  it('parses a zod text format', async () => {
    const Answer = z.object({ city: z.string(), days: z.number().int() });
    const parsed = await client.responses.parse({
      model: 'sim-chat',
      input: 'A forecast, please.',
      text: { format: zodTextFormat(Answer, 'forecast') },
      store: false,
    });
    expect(Answer.parse(parsed.output_parsed)).toEqual(parsed.output_parsed);
    // Not stored.
    expect((await refusalOf(client.responses.retrieve(parsed.id), OpenAI.APIError)).status).toBe(404);
  });

  it('runs a function tool round trip, then continues the chain by previous_response_id', async () => {
    const first = await client.responses.create({
      model: 'sim-chat',
      input: 'Use get_weather for Oslo.',
      tools: [WEATHER_TOOL, { type: 'web_search' }],
    });
    const call = first.output.find((item) => item.type === 'function_call');
    expect(call).toMatchObject({ type: 'function_call', name: 'get_weather', status: 'completed' });
    if (call?.type !== 'function_call') throw new Error('no call');
    expect(JSON.parse(call.arguments)).toEqual({ city: expect.any(String) });

    const second = await client.responses.create({
      model: 'sim-chat',
      previous_response_id: first.id,
      input: [{ type: 'function_call_output', call_id: call.call_id, output: 'sunny, 21 C' }],
      tools: [WEATHER_TOOL],
    });
    expect(second.output_text).toContain('sunny, 21 C');

    const third = await client.responses.create({
      model: 'sim-chat',
      previous_response_id: second.id,
      input: 'Thanks, repeat this.',
    });
    expect(third.output_text).toBe('Thanks, repeat this.');
    expect(third.previous_response_id).toBe(second.id);

    // An item of a stored response, referenced by id (as the AI SDK's tool loop does).
    const referenced = await client.responses.create({
      model: 'sim-chat',
      input: [
        { type: 'item_reference', id: call.id! },
        { type: 'function_call_output', call_id: call.call_id, output: 'rainy, 9 C' },
      ],
      tools: [WEATHER_TOOL],
    });
    expect(referenced.output_text).toContain('rainy, 9 C');

    // A foreign or unknown previous response is OpenAI's 400, and nothing is stored for it.
    const other = await newClient();
    const foreign = await refusalOf(
      other.responses.create({ model: 'sim-chat', previous_response_id: third.id, input: 'x' }),
      OpenAI.APIError,
    );
    expect(foreign.status).toBe(400);
    expect(foreign.error).toMatchObject({
      param: 'previous_response_id',
      code: 'previous_response_not_found',
    });
  });

  it('refuses bad input with 400s naming the param, stores nothing, never 500s', async () => {
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ input: [{ type: 'mystery_item' }] }, 'input[0].type'],
      [
        { input: [{ role: 'user', content: [{ type: 'input_text', text: 'x' }, { type: 'input_audio' }] }] },
        'input[0].content[1].type',
      ],
      [{ input: [{ type: 'function_call_output', call_id: 'call_nope', output: 'x' }] }, 'input'],
      [
        { input: 'x', text: { format: { type: 'json_schema', name: 'x', schema: { type: 'nonsense' } } } },
        'text.format.schema',
      ],
      [{ input: 'x'.repeat(1024), max_output_tokens: -1 }, 'max_output_tokens'],
      [{ input: Array.from({ length: 5000 }, () => ({ role: 'user', content: 'x' })) }, 'input'],
    ];
    const keysBefore = await stack.redis.keys(`${stack.namespace}:responses:*:r:*`);
    for (const [body, param] of cases) {
      const res = await stack.post('/v1/responses', { model: 'sim-chat', ...body });
      const answer = (await res.json()) as { error: { param: string; type: string } };
      expect([res.status, answer.error.param]).toEqual([400, param]);
      expect(answer.error.type).toBe('invalid_request_error');
    }
    expect(await stack.redis.keys(`${stack.namespace}:responses:*:r:*`)).toEqual(keysBefore);
  });

  it('refuses more bad input the same way, streamed, in the background or in a chain, and stores nothing for it', async () => {
    const mine = await client.responses.create({ model: 'sim-chat', input: 'mine' });
    const theirs = await (await newClient()).responses.create({ model: 'sim-chat', input: 'theirs' });
    const unknownId = `resp_${randomBytes(12).toString('hex')}`;
    const cases: Array<[Record<string, unknown>, string, string | null]> = [
      // Unknown item types, also where a stream or a background response was asked for.
      [{ input: [{ type: 'mystery_item' }], stream: true }, 'input[0].type', null],
      [{ input: [{ type: 'mystery_item' }], background: true }, 'input[0].type', null],
      [{ input: [{ type: 'message', role: 'narrator', content: 'x' }] }, 'input[0].role', null],
      // A function_call_output whose call_id no call in the conversation has, with or without a chain.
      [
        {
          previous_response_id: mine.id,
          input: [{ type: 'function_call_output', call_id: 'call_nope', output: 'x' }],
        },
        'input',
        null,
      ],
      // Foreign, unknown and malformed previous responses: OpenAI's one refusal.
      [
        { previous_response_id: theirs.id, input: 'x' },
        'previous_response_id',
        'previous_response_not_found',
      ],
      [
        { previous_response_id: unknownId, input: 'x' },
        'previous_response_id',
        'previous_response_not_found',
      ],
      [{ previous_response_id: 'nope', input: 'x', background: true }, 'previous_response_id', null],
      // text.format schemas that are not one.
      [
        { input: 'x', text: { format: { type: 'json_schema', schema: { type: 'object' } } } },
        'text.format.name',
        null,
      ],
      [
        { input: 'x', text: { format: { type: 'json_schema', name: 'x', schema: 'object' } } },
        'text.format.schema',
        null,
      ],
      [{ input: 'x', text: { format: { type: 'json_schema', name: 'x' } } }, 'text.format.schema', null],
      [{ input: 'x', text: { format: { type: 'yaml' } } }, 'text.format.type', null],
      [
        {
          input: 'x',
          text: {
            format: {
              type: 'json_schema',
              name: 'x',
              schema: { type: 'object', properties: { a: { type: ['string', 'date'] } } },
            },
          },
        },
        'text.format.schema',
        'invalid_json_schema',
      ],
      // Oversized: more content parts in one message than CHAT_MAX_CONTENT_PARTS (256) where they stay parts
      // (with an image; text-only parts join into one text), more tools than 128, more metadata pairs than 16.
      [
        {
          input: [
            {
              role: 'user',
              content: [
                { type: 'input_image', image_url: 'data:image/png;base64,iVBORw0KGgo=' },
                ...Array.from({ length: 300 }, () => ({ type: 'input_text', text: 'x' })),
              ],
            },
          ],
        },
        // The chat message's index is not the item's (history and instructions come first): `input`.
        'input',
        null,
      ],
      [
        {
          input: 'x',
          tools: Array.from({ length: 129 }, (_, i) => ({ ...WEATHER_TOOL, name: `tool_${i}` })),
        },
        'tools',
        null,
      ],
      [
        { input: 'x', metadata: Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, 'v'])) },
        'metadata',
        null,
      ],
    ];
    const keysBefore = (await stack.redis.keys(`${stack.namespace}:responses:*`)).sort();
    for (const [body, param, code] of cases) {
      const res = await stack.post('/v1/responses', { model: 'sim-chat', ...body });
      const answer = (await res.json()) as { error: { param: string; type: string; code: string | null } };
      expect([JSON.stringify(body).slice(0, 80), res.status, answer.error.param]).toEqual([
        JSON.stringify(body).slice(0, 80),
        400,
        param,
      ]);
      expect(answer.error.type).toBe('invalid_request_error');
      if (code !== null) expect(answer.error.code).toBe(code);
    }
    // Nothing stored: no record, no log, no index entry.
    expect((await stack.redis.keys(`${stack.namespace}:responses:*`)).sort()).toEqual(keysBefore);
    const indexes = keysBefore.filter((key) => key.endsWith(':index'));
    const members = await Promise.all(indexes.map((key) => stack.redis.zcard(key)));
    expect(members.reduce((sum, n) => sum + n, 0)).toBe(
      keysBefore.filter((key) => key.includes(':r:')).length,
    );
  });

  it("refuses a prompt over the model's context window at the gateway, a chain's stored history included, as a 400 naming input; stores nothing", async () => {
    // tiny-chat has 16 tokens: at least 17 tokens is anything over 16 × 256 characters.
    const longer = 'y'.repeat(16 * 256 + 1);
    const keysBefore = await stack.redis.keys(`${stack.namespace}:responses:*:r:*`);
    const direct = await refusalOf(
      client.responses.create({ model: 'tiny-chat', input: longer }),
      OpenAI.APIError,
    );
    expect([direct.status, direct.code, direct.param]).toEqual([400, 'context_length_exceeded', 'input']);
    // "at least": the gateway's lower bound refused it, not the worker's exact count.
    expect(direct.message).toContain('at least 17 tokens');
    // A short turn whose stored history (3,000 characters in, the same echoed back) does not fit.
    const first = await client.responses.create({ model: 'sim-chat', input: 'y'.repeat(3000) });
    const keysWithFirst = await stack.redis.keys(`${stack.namespace}:responses:*:r:*`);
    const chained = await refusalOf(
      client.responses.create({ model: 'tiny-chat', input: 'hi', previous_response_id: first.id }),
      OpenAI.APIError,
    );
    expect([chained.status, chained.code, chained.param]).toEqual([400, 'context_length_exceeded', 'input']);
    const streamed = await refusalOf(
      client.responses.create({
        model: 'tiny-chat',
        input: 'hi',
        previous_response_id: first.id,
        stream: true,
      }),
      OpenAI.APIError,
    );
    expect([streamed.status, streamed.code]).toEqual([400, 'context_length_exceeded']);
    // Only the first turn was stored.
    expect(keysWithFirst.length).toBe(keysBefore.length + 1);
    expect((await stack.redis.keys(`${stack.namespace}:responses:*:r:*`)).sort()).toEqual(
      keysWithFirst.sort(),
    );
    // Under the gateway's bound but over the worker's exact count: the worker's refusal names input too.
    const counted = await refusalOf(
      client.responses.create({ model: 'tiny-chat', input: 'word '.repeat(100) }),
      OpenAI.APIError,
    );
    expect([counted.status, counted.code, counted.param]).toEqual([400, 'context_length_exceeded', 'input']);
    expect(counted.message).not.toContain('at least');
    // The same short turn fits without the history.
    const alone = await client.responses.create({ model: 'tiny-chat', input: 'hi' });
    expect(alone.status).toBe('completed');
  });

  it('runs a background response to completion while polled, and cancels another', async () => {
    const queued = await client.responses.create({ model: 'slow-chat', input: LONG_TEXT, background: true });
    expect(queued).toMatchObject({ status: 'queued', background: true });
    const seen = new Set<string>();
    const done = await waitFor('the background response to end', async () => {
      const current = await client.responses.retrieve(queued.id);
      seen.add(current.status!);
      return current.status === 'completed' ? current : null;
    });
    expect(done.output_text).toBe(LONG_TEXT);
    expect(seen.has('in_progress')).toBe(true);

    const doomed = await client.responses.create({ model: 'slow-chat', input: LONG_TEXT, background: true });
    await waitFor(
      'it to run',
      async () => (await client.responses.retrieve(doomed.id)).status === 'in_progress',
    );
    const cancelled = await client.responses.cancel(doomed.id);
    expect(cancelled.status).toBe('cancelled');
    // Its job stopped: it leaves the queue's active list, and its replay log stops growing, without an end.
    const jobId = doomed.id.slice('resp_'.length);
    const active = `${stack.namespace}:chat.slow-chat:active`;
    await waitFor('its job to stop', async () => !(await stack.redis.lrange(active, 0, -1)).includes(jobId));
    const log = `${stack.namespace}:stream:${jobId}:log`;
    const stoppedAt = await stack.redis.xlen(log);
    // A barrier instead of a pause: a later response of the same worker, run to its end. A generation still
    // running would have appended to the log meanwhile.
    expect(
      (await client.responses.create({ model: 'slow-chat', input: 'one two three four five six' })).status,
    ).toBe('completed');
    expect(await stack.redis.xlen(log)).toBe(stoppedAt);
    expect(JSON.stringify(await stack.redis.xrange(log, '-', '+'))).not.toContain('chat-done');
    expect((await client.responses.retrieve(doomed.id)).status).toBe('cancelled');

    const foreground = await client.responses.create({ model: 'sim-chat', input: 'x' });
    expect((await refusalOf(client.responses.cancel(foreground.id), OpenAI.APIError)).status).toBe(400);
  });

  it('resumes a background stream after starting_after with the same sequence numbers', async () => {
    const stream = await client.responses.create({
      model: 'slow-chat',
      input: LONG_TEXT,
      background: true,
      stream: true,
    });
    const first: Array<{ sequence_number: number; type: string }> = [];
    let id = '';
    for await (const event of stream) {
      first.push(event);
      if (event.type === 'response.created') id = event.response.id;
      if (first.length === 6) break;
    }
    const resumed = await fetch(`${stack.baseUrl}/v1/responses/${id}?stream=true&starting_after=5`, {
      headers: stack.headers(),
    });
    expect(resumed.status).toBe(200);
    const text = await resumed.text();
    const numbers = [...text.matchAll(/"sequence_number":(\d+)/g)].map((m) => Number(m[1]));
    expect(numbers[0]).toBe(6);
    expect(numbers).toEqual(numbers.map((_, i) => i + 6));
    expect(text).toContain('event: response.completed');
    expect((await client.responses.retrieve(id)).output_text).toBe(LONG_TEXT);
  });

  /**
   * A background stream opened on a gateway of its own, read for a few events, then that gateway stopped by
   * `signal` while the client still reads; after `awayMs` the client resumes on the stack's gateway from the
   * last event it got. Answers the events each connection saw.
   */
  async function backgroundStreamAcrossStop(signal: 'SIGTERM' | 'SIGKILL', label: string, awayMs = 0) {
    const port = await freePort();
    // A drain shorter than the stream: one that waited for it, or ended it, would show.
    stack.spawnExtra(`gateway:${label}`, {
      PORT: String(port),
      GATEWAY_DRAIN_TIMEOUT_MS: '1000',
      // A chat stream nobody resumes stops this soon after its gateway is gone; a background one must not.
      RESUME_GRACE_MS: '300',
      LOG_LEVEL: 'log',
    });
    const other = new OpenAI({ apiKey: stack.apiKey, baseURL: `http://127.0.0.1:${port}/v1`, maxRetries: 0 });
    await waitFor(`gateway ${label}`, async () => (await other.models.list()).data.length > 0);
    const stream = await other.responses.create({
      model: 'slow-chat',
      input: LONGER_TEXT,
      background: true,
      stream: true,
    });
    const first: Array<{ sequence_number: number; type: string }> = [];
    let id = '';
    let stopped: Promise<NodeJS.Signals | number | null> | undefined;
    try {
      for await (const event of stream) {
        first.push(event);
        if (event.type === 'response.created') id = event.response.id;
        if (first.length === 6) stopped = stack.stopApp(`gateway:${label}`, signal);
      }
    } catch {
      // The connection was cut: what a client of a stopped gateway sees.
    }
    expect(await stopped).toBe(signal);
    await new Promise((resolve) => setTimeout(resolve, awayMs));
    const last = first.at(-1)!.sequence_number;
    const resumed = await fetch(`${stack.baseUrl}/v1/responses/${id}?stream=true&starting_after=${last}`, {
      headers: stack.headers(),
    });
    expect(resumed.status).toBe(200);
    const text = await resumed.text();
    return { id, first, last, text };
  }

  function expectResumedToTheEnd(run: Awaited<ReturnType<typeof backgroundStreamAcrossStop>>): void {
    const { first, last, text } = run;
    // The stop cut the first connection before the end, with no gap in what it delivered.
    expect(first.map((event) => event.type)).not.toContain('response.completed');
    expect(first.map((event) => event.sequence_number)).toEqual(first.map((_, i) => i));
    // The other gateway carries on from there, without a gap, to the end.
    const numbers = [...text.matchAll(/"sequence_number":(\d+)/g)].map((m) => Number(m[1]));
    expect(numbers.length).toBeGreaterThan(0);
    expect(numbers).toEqual(numbers.map((_, i) => i + last + 1));
    expect(text).toContain('event: response.completed');
    expect(text).not.toContain('event: error');
  }

  it('a background stream runs on through the drain (SIGTERM) of the gateway that accepted it, and resumes on another to response.completed', async () => {
    const run = await backgroundStreamAcrossStop('SIGTERM', 'drained');
    expectResumedToTheEnd(run);
    expect((await client.responses.retrieve(run.id)).output_text).toBe(LONGER_TEXT);
    // The drain neither waited for it nor ended it: it let go of it.
    expect(stack.logs('gateway:drained')).toContain('draining 0 open request(s)');
    expect(stack.logs('gateway:drained')).not.toContain('drain timeout');
    expect(stack.logs('gateway:drained')).not.toMatch(/"level":"(error|fatal)"/);
  });

  it('a background stream runs on when the gateway that accepted it is killed (-9), unheard past the resume grace, and resumes on another to response.completed', async () => {
    const run = await backgroundStreamAcrossStop('SIGKILL', 'killed', 1500);
    expectResumedToTheEnd(run);
    const done = await client.responses.retrieve(run.id);
    expect([done.status, done.output_text]).toEqual(['completed', LONGER_TEXT]);
  });

  it('keeps a background response going through the restart of the gateway that accepted it', async () => {
    const port = await freePort();
    stack.spawnExtra('gateway:b', { PORT: String(port) });
    const other = new OpenAI({ apiKey: stack.apiKey, baseURL: `http://127.0.0.1:${port}/v1`, maxRetries: 0 });
    await waitFor('gateway b', async () => (await other.models.list()).data.length > 0);
    const queued = await other.responses.create({ model: 'slow-chat', input: LONG_TEXT, background: true });
    await waitFor(
      'it to run',
      async () => (await other.responses.retrieve(queued.id)).status === 'in_progress',
    );
    await stack.stopApp('gateway:b');
    stack.spawnExtra('gateway:b2', { PORT: String(port) });
    await waitFor('gateway b again', async () => (await other.models.list()).data.length > 0);
    const done = await waitFor('the response to complete', async () => {
      const current = await other.responses.retrieve(queued.id);
      return current.status === 'completed' ? current : null;
    });
    expect(done.output_text).toBe(LONG_TEXT);
    await stack.stopApp('gateway:b2');
  });
});
