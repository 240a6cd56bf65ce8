import { randomInt } from 'node:crypto';
import fc from 'fast-check';
import { Stack } from '../support/stack';

/** Bodies per POST route and seed (FUZZ_RUNS overrides, e.g. for a longer local hunt). */
const RUNS = Number(process.env.FUZZ_RUNS ?? 800);
/**
 * Seeds every run goes through, plus one drawn at random per run (printed, and named by any failure):
 * FUZZ_SEED replays one seed alone.
 */
const FIXED_SEEDS = [1, 7_919, 104_729];
const RANDOM_SEED = randomInt(2 ** 31);
const SEEDS = process.env.FUZZ_SEED ? [Number(process.env.FUZZ_SEED)] : [...FIXED_SEEDS, RANDOM_SEED];
const CONCURRENCY = 16;
const BODY_LIMIT = 64 * 1024;

const PROTO_KEYS = ['__proto__', 'constructor', 'prototype'];

/** Values that break naive validators: wrong types, NaN-likes, extremes, odd unicode, deep nesting. */
const nasty: fc.Arbitrary<unknown> = fc.oneof(
  fc.jsonValue({ maxDepth: 3 }),
  fc.constantFrom(
    null,
    true,
    '',
    'NaN',
    'Infinity',
    '-Infinity',
    '-0',
    '1e309',
    '0x10',
    ' 1 ',
    '\u0000',
    '\uFEFF',
    '\uD800',
    '😀'.repeat(100),
    'A\u0301\u0302\u0303',
    1e308,
    -1e308,
    Number.MAX_SAFE_INTEGER + 2,
    -0,
    0.1,
    2 ** 31,
    -1,
    [],
    {},
    [[[[[[]]]]]],
    { __proto__: { polluted: true } },
  ),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.integer({ min: -(2 ** 53), max: 2 ** 53 }),
  fc.double(),
);

/** A valid Messages body: a system prompt, a content part, a tool and advisory parameters. */
const VALID_MESSAGES = () => ({
  model: 'sim-chat',
  max_tokens: 4,
  system: 'be brief',
  messages: [{ role: 'user', content: [{ type: 'text', text: 'hello' }] }],
  temperature: 1,
  stop_sequences: ['zz'],
  metadata: { user_id: 'u1' },
  tools: [
    {
      name: 'get_weather',
      description: 'weather',
      input_schema: { type: 'object', properties: { city: { type: 'string' } } },
    },
  ],
  tool_choice: { type: 'auto' },
});

/** A valid body of each POST route. `{stored}`/`{response}` in a path: a stored completion's/response's id. */
const VALID = {
  '/v1/chat/completions': () => ({
    model: 'sim-chat',
    messages: [{ role: 'user', content: 'hello' }],
    max_tokens: 4,
  }),
  '/v1/images/generations': () => ({ model: 'sim-image', prompt: 'a cat', size: '256x256' }),
  '/v1/responses': () => ({
    model: 'sim-chat',
    instructions: 'be brief',
    input: [
      { role: 'user', content: [{ type: 'input_text', text: 'hello' }] },
      { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'hi' }] },
      { role: 'user', content: 'again' },
    ],
    max_output_tokens: 16,
    temperature: 1,
    store: false,
    metadata: { a: 'b' },
    tools: [
      {
        type: 'function',
        name: 'get_weather',
        parameters: { type: 'object', properties: { city: { type: 'string' } } },
      },
    ],
    text: { format: { type: 'text' } },
  }),
  '/v1/messages': VALID_MESSAGES,
  '/v1/messages/count_tokens': () => {
    const {
      max_tokens: _max,
      stop_sequences: _stop,
      metadata: _meta,
      temperature: _t,
      ...body
    } = VALID_MESSAGES();
    return body;
  },
  '/v1/embeddings': () => ({ model: 'sim-embed', input: ['hello', 'world'], encoding_format: 'float' }),
  '/v1/chat/completions/{stored}': () => ({ metadata: { topic: 'fuzz' } }),
  '/v1/responses/{response}/cancel': () => ({}),
} as const;
type Endpoint = keyof typeof VALID;

/** Routes that answer errors in Anthropic's shape; every other one in OpenAI's. */
const ANTHROPIC_ROUTES: readonly Endpoint[] = ['/v1/messages', '/v1/messages/count_tokens'];

/** A valid chat body using tools, a tool loop, a JSON schema format, logprobs and advisory parameters. */
const VALID_WITH_TOOLS = () => ({
  model: 'sim-chat',
  messages: [
    { role: 'user', content: 'weather in Paris?' },
    {
      role: 'assistant',
      content: null,
      tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{}' } }],
    },
    { role: 'tool', tool_call_id: 'call_1', content: [{ type: 'text', text: '21C' }] },
  ],
  tools: [
    {
      type: 'function',
      function: {
        name: 'get_weather',
        description: 'weather',
        parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
        strict: false,
      },
    },
  ],
  tool_choice: { type: 'function', function: { name: 'get_weather' } },
  parallel_tool_calls: true,
  response_format: { type: 'json_schema', json_schema: { name: 'answer', schema: { type: 'object' } } },
  logprobs: true,
  top_logprobs: 2,
  metadata: { a: 'b' },
  store: false,
  max_tokens: 4,
});

const CHAT_FIELDS = [
  'model',
  'messages',
  'stream',
  'n',
  'max_tokens',
  'max_completion_tokens',
  'temperature',
  'top_p',
  'stop',
  'presence_penalty',
  'frequency_penalty',
  'seed',
  'user',
  'stream_options',
  'messages.0',
  'messages.0.role',
  'messages.0.content',
  'messages.0.name',
  'messages.0.content.0',
];
const IMAGE_FIELDS = ['model', 'prompt', 'n', 'size', 'response_format', 'user', 'quality', 'style'];
const RESPONSES_FIELDS = [
  'model',
  'input',
  'instructions',
  'max_output_tokens',
  'temperature',
  'top_p',
  'stream',
  'store',
  'background',
  'previous_response_id',
  'metadata',
  'metadata.a',
  'tools',
  'tools.0',
  'tools.0.type',
  'tools.0.name',
  'tools.0.parameters',
  'tool_choice',
  'parallel_tool_calls',
  'text',
  'text.format',
  'text.format.type',
  'input.0',
  'input.0.role',
  'input.0.content',
  'input.0.content.0',
  'input.0.content.0.type',
  'input.0.content.0.text',
  'input.0.content.0.image_url',
  'input.1',
  'input.1.type',
  'input.1.content.0',
  'input.1.content.0.type',
  'input.2.content',
  'input.3',
  'input.3.type',
  'input.3.id',
  'input.3.call_id',
  'input.3.output',
  'reasoning',
  'truncation',
  'include',
  'user',
  'service_tier',
];
const MESSAGES_FIELDS = [
  'model',
  'max_tokens',
  'system',
  'messages',
  'messages.0',
  'messages.0.role',
  'messages.0.content',
  'messages.0.content.0',
  'messages.0.content.0.type',
  'messages.0.content.0.text',
  'messages.0.content.0.source',
  'messages.0.content.0.cache_control',
  'messages.1',
  'messages.1.role',
  'messages.1.content',
  'temperature',
  'top_p',
  'top_k',
  'stop_sequences',
  'stream',
  'metadata',
  'metadata.user_id',
  'tools',
  'tools.0',
  'tools.0.name',
  'tools.0.input_schema',
  'tools.0.input_schema.type',
  'tool_choice',
  'tool_choice.type',
  'thinking',
  'service_tier',
];
const EMBEDDING_FIELDS = ['model', 'input', 'input.0', 'input.1', 'encoding_format', 'dimensions', 'user'];
const UPDATE_FIELDS = ['metadata', 'metadata.topic', 'metadata.other', 'model', 'messages'];
const CANCEL_FIELDS = ['id', 'model', 'stream'];
const FIELDS: Record<Endpoint, string[]> = {
  '/v1/chat/completions': CHAT_FIELDS,
  '/v1/images/generations': IMAGE_FIELDS,
  '/v1/responses': RESPONSES_FIELDS,
  '/v1/messages': MESSAGES_FIELDS,
  '/v1/messages/count_tokens': MESSAGES_FIELDS,
  '/v1/embeddings': EMBEDDING_FIELDS,
  '/v1/chat/completions/{stored}': UPDATE_FIELDS,
  '/v1/responses/{response}/cancel': CANCEL_FIELDS,
};
/** Paths into VALID_WITH_TOOLS, plus OpenAI parameters the body does not have (set to nasty values). */
const TOOL_FIELDS = [
  'tools',
  'tools.0',
  'tools.0.type',
  'tools.0.function',
  'tools.0.function.name',
  'tools.0.function.description',
  'tools.0.function.parameters',
  'tools.0.function.parameters.type',
  'tools.0.function.parameters.properties',
  'tools.0.function.parameters.properties.city',
  'tools.0.function.parameters.required',
  'tools.0.function.strict',
  'tools.1',
  'tool_choice',
  'tool_choice.type',
  'tool_choice.function',
  'tool_choice.function.name',
  'parallel_tool_calls',
  'response_format',
  'response_format.type',
  'response_format.json_schema',
  'response_format.json_schema.name',
  'response_format.json_schema.schema',
  'response_format.json_schema.strict',
  'logprobs',
  'top_logprobs',
  'messages.1',
  'messages.1.role',
  'messages.1.content',
  'messages.1.refusal',
  'messages.1.tool_calls',
  'messages.1.tool_calls.0',
  'messages.1.tool_calls.0.id',
  'messages.1.tool_calls.0.type',
  'messages.1.tool_calls.0.function.name',
  'messages.1.tool_calls.0.function.arguments',
  'messages.2',
  'messages.2.role',
  'messages.2.tool_call_id',
  'messages.2.content',
  'messages.2.content.0',
  'logit_bias',
  'metadata',
  'store',
  'service_tier',
  'reasoning_effort',
  'verbosity',
  'prediction',
  'modalities',
  'audio',
  'functions',
  'function_call',
  'web_search_options',
  'stream_options.include_obfuscation',
];

function setPath(target: Record<string, unknown>, path: string, value: unknown): void {
  const keys = path.split('.');
  let node: unknown = target;
  for (const key of keys.slice(0, -1)) {
    if (typeof node !== 'object' || node === null) return;
    const record = node as Record<string, unknown>;
    if (typeof record[key] !== 'object' || record[key] === null) record[key] = {};
    node = record[key];
  }
  if (typeof node === 'object' && node !== null) {
    Object.defineProperty(node, keys.at(-1)!, {
      value,
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
}

/** Which valid body the mutations start from: the endpoint's plain one, or the chat body with tools. */
type Corpus = 'plain' | 'tools';

/** Raw request bodies: valid bodies with one field made nasty, extra and prototype keys, and non-JSON. */
function bodies(endpoint: Endpoint, corpus: Corpus): fc.Arbitrary<string> {
  const fields = corpus === 'tools' ? TOOL_FIELDS : FIELDS[endpoint];
  const valid = corpus === 'tools' ? VALID_WITH_TOOLS : VALID[endpoint];
  const mutated = fc
    .tuple(fc.constantFrom(...fields), nasty, fc.boolean())
    .map(([path, value, alsoExtra]) => {
      const body = valid() as Record<string, unknown>;
      setPath(body, path, value);
      if (alsoExtra) body.unexpected = value;
      return JSON.stringify(body) ?? 'undefined';
    });
  const polluted = fc.tuple(fc.constantFrom(...PROTO_KEYS), nasty).map(([key, value]) => {
    const json = JSON.stringify(valid());
    return `{"${key}":${JSON.stringify(value) ?? 'null'},${json.slice(1)}`;
  });
  const anyJson = fc.jsonValue({ maxDepth: 6 }).map((value) => JSON.stringify(value));
  const deep = fc
    .integer({ min: 100, max: 20_000 })
    .map((depth) => `{"model":${'['.repeat(depth)}${']'.repeat(depth)}}`);
  const broken = fc.oneof(
    fc.string({ unit: 'binary', maxLength: 200 }),
    fc.constantFrom('{', '{"model":', '[', 'null', '"', '{"a":1}}', '\u0000', '{"model":"sim-chat",}'),
  );
  const huge = fc.integer({ min: BODY_LIMIT + 1, max: BODY_LIMIT * 4 }).map((size) => {
    const json = JSON.stringify(valid());
    return `{"pad":"${'x'.repeat(size)}",${json.slice(1)}`;
  });
  return fc.oneof(
    { weight: 10, arbitrary: mutated },
    { weight: 2, arbitrary: polluted },
    { weight: 3, arbitrary: anyJson },
    { weight: 1, arbitrary: deep },
    { weight: 2, arbitrary: broken },
    { weight: 1, arbitrary: huge },
  );
}

interface Outcome {
  body: string;
  status: number;
  text: string;
}

/** How a failure is replayed: this seed alone, with the same number of runs, on this route. */
const replay = (seed: number, endpoint: Endpoint, corpus: Corpus) =>
  `FUZZ_SEED=${seed} FUZZ_RUNS=${RUNS} npx jest test/faults/fuzz --selectProjects e2e -t 'to ${endpoint} \\(${corpus} corpus'`;

/**
 * Property: whatever the body, the gateway answers with a client error in the route's own error shape
 * (OpenAI's, or Anthropic's on /v1/messages*) — or serves it, if the mutation happened to be valid — never
 * a 5xx, never a hang, never a crash.
 */
describe('faults: fuzzing every POST endpoint', () => {
  let stack: Stack;
  /** Ids the `{stored}` and `{response}` paths stand for, made in beforeAll. */
  const ids = { stored: '', response: '' };

  beforeAll(async () => {
    process.stdout.write(
      `fuzz: seeds ${SEEDS.join(', ')}${process.env.FUZZ_SEED ? '' : ` (the last drawn at random)`}, ${RUNS} bodies per route and seed\n`,
    );
    stack = await Stack.start({
      with: ['embedding-worker'],
      waitForModels: ['sim-chat', 'sim-image', 'sim-embed'],
      appEnv: { gateway: { BODY_LIMIT_BYTES: String(BODY_LIMIT) } },
    });
    const stored = await stack.post('/v1/chat/completions', {
      ...VALID['/v1/chat/completions'](),
      store: true,
    });
    expect(stored.status).toBe(200);
    ids.stored = ((await stored.json()) as { id: string }).id;
    const response = await stack.post('/v1/responses', { model: 'sim-chat', input: 'hi', background: true });
    expect(response.status).toBe(200);
    ids.response = ((await response.json()) as { id: string }).id;
  });

  afterAll(async () => {
    await stack?.stop();
  });

  const pathOf = (endpoint: Endpoint) =>
    endpoint.replace('{stored}', ids.stored).replace('{response}', ids.response);

  async function send(endpoint: Endpoint, body: string): Promise<Outcome> {
    const res = await fetch(`${stack.baseUrl}${pathOf(endpoint)}`, {
      method: 'POST',
      headers: stack.headers(),
      body,
      signal: AbortSignal.timeout(30_000),
    });
    return { body, status: res.status, text: await res.text() };
  }

  /** Whether the body has a prototype-related key anywhere (such bodies must be refused, not served). */
  function hasPrototypeKey(body: string): boolean {
    let found = false;
    try {
      JSON.parse(body, (key, value: unknown) => {
        if (PROTO_KEYS.includes(key)) found = true;
        return value;
      });
    } catch {
      return false; // not JSON, or too deep for the reviver: judged by the other rules
    }
    return found;
  }

  /** What is wrong with an OpenAI error body, if anything. */
  function openAIProblem(parsed: Record<string, unknown>): string | null {
    const error = (parsed.error ?? {}) as Record<string, unknown>;
    const keys = Object.keys(error).sort().join(',');
    if (Object.keys(parsed).join(',') !== 'error') return `top-level keys ${Object.keys(parsed).join(',')}`;
    if (keys !== 'code,message,param,type') return `error keys ${keys}`;
    if (typeof error.message !== 'string' || error.type !== 'invalid_request_error') return 'error fields';
    return null;
  }

  /** Anthropic's `{type: 'error', error: {type, message}}`, with the type its status has. */
  function anthropicProblem(parsed: Record<string, unknown>, status: number): string | null {
    const error = (parsed.error ?? {}) as Record<string, unknown>;
    if (Object.keys(parsed).sort().join(',') !== 'error,type' || parsed.type !== 'error') {
      return `top-level keys ${Object.keys(parsed).join(',')}`;
    }
    const keys = Object.keys(error).sort().join(',');
    if (keys !== 'message,type') return `error keys ${keys}`;
    const expected =
      status === 404 ? 'not_found_error' : status === 413 ? 'request_too_large' : 'invalid_request_error';
    if (typeof error.message !== 'string' || error.type !== expected) return 'error fields';
    return null;
  }

  function problemWith(endpoint: Endpoint, outcome: Outcome): string | null {
    if (outcome.status === 200 && hasPrototypeKey(outcome.body)) return 'served a prototype key';
    if (outcome.status === 200) return null;
    if (![400, 404, 413, 415].includes(outcome.status)) return `status ${outcome.status}`;
    let parsed: Record<string, unknown>;
    try {
      parsed = JSON.parse(outcome.text) as Record<string, unknown>;
    } catch {
      return 'body is not JSON';
    }
    if (typeof parsed !== 'object' || parsed === null) return 'body is not an object';
    return ANTHROPIC_ROUTES.includes(endpoint)
      ? anthropicProblem(parsed, outcome.status)
      : openAIProblem(parsed);
  }

  const CASES: Array<[Endpoint, Corpus]> = [
    ['/v1/chat/completions', 'plain'],
    ['/v1/chat/completions', 'tools'],
    ['/v1/images/generations', 'plain'],
    ['/v1/responses', 'plain'],
    ['/v1/messages', 'plain'],
    ['/v1/messages/count_tokens', 'plain'],
    ['/v1/embeddings', 'plain'],
    ['/v1/chat/completions/{stored}', 'plain'],
    ['/v1/responses/{response}/cancel', 'plain'],
  ];

  it.each(CASES.flatMap(([endpoint, corpus]) => SEEDS.map((seed) => [endpoint, corpus, seed] as const)))(
    `answers ${RUNS} generated bodies to %s (%s corpus, seed %d) with 4xx errors in its error shape`,
    async (endpoint, corpus, seed) => {
      const samples = fc.sample(bodies(endpoint, corpus), { numRuns: RUNS, seed });
      const statuses = new Map<number, number>();
      const failures: string[] = [];
      let next = 0;
      const lane = async (): Promise<void> => {
        while (next < samples.length) {
          const body = samples[next++]!;
          const outcome = await send(endpoint, body);
          statuses.set(outcome.status, (statuses.get(outcome.status) ?? 0) + 1);
          const problem = problemWith(endpoint, outcome);
          if (problem && failures.length < 5) {
            failures.push(`${problem}: ${body.slice(0, 300)} -> ${outcome.text.slice(0, 300)}`);
          }
        }
      };
      await Promise.all(Array.from({ length: CONCURRENCY }, lane));
      expect({ replay: replay(seed, endpoint, corpus), failures }).toEqual({
        replay: replay(seed, endpoint, corpus),
        failures: [],
      });
      // The generator reaches every kind of refusal, so the property is not vacuous.
      expect([...statuses.keys()]).toEqual(expect.arrayContaining([400, 413]));
      for (const [app, child] of stack.processes) expect([app, child.exitCode]).toEqual([app, null]);
      const valid = await send(
        endpoint,
        JSON.stringify((corpus === 'tools' ? VALID_WITH_TOOLS : VALID[endpoint])()),
      );
      expect([valid.status, valid.text.slice(0, 300)]).toEqual([200, expect.any(String)]);
    },
    240_000,
  );
});
