import { randomInt } from 'node:crypto';
import fc from 'fast-check';
import { Stack } from '../support/stack';

/** Bodies per POST endpoint (FUZZ_RUNS overrides, e.g. for a longer local hunt). */
const RUNS = Number(process.env.FUZZ_RUNS ?? 10_000);
const SEED = Number(process.env.FUZZ_SEED ?? randomInt(2 ** 31));
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

/** The property paths of a valid body of each endpoint, and the body itself. */
const VALID = {
  '/v1/chat/completions': () => ({
    model: 'sim-chat',
    messages: [{ role: 'user', content: 'hello' }],
    max_tokens: 4,
  }),
  '/v1/images/generations': () => ({ model: 'sim-image', prompt: 'a cat', size: '256x256' }),
} as const;
type Endpoint = keyof typeof VALID;

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
  const fields =
    corpus === 'tools' ? TOOL_FIELDS : endpoint === '/v1/chat/completions' ? CHAT_FIELDS : IMAGE_FIELDS;
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

/**
 * Property: whatever the body, the gateway answers with a client error in the OpenAI shape (or serves it,
 * if the mutation happened to be valid) — never a 5xx, never a hang, never a crash.
 */
describe('faults: fuzzing every POST endpoint', () => {
  let stack: Stack;

  beforeAll(async () => {
    stack = await Stack.start({ appEnv: { gateway: { BODY_LIMIT_BYTES: String(BODY_LIMIT) } } });
  });

  afterAll(async () => {
    await stack?.stop();
  });

  async function send(endpoint: Endpoint, body: string): Promise<Outcome> {
    const res = await fetch(`${stack.baseUrl}${endpoint}`, {
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

  function problemWith(outcome: Outcome): string | null {
    if (outcome.status === 200 && hasPrototypeKey(outcome.body)) return 'served a prototype key';
    if (outcome.status === 200) return null;
    if (![400, 404, 413, 415].includes(outcome.status)) return `status ${outcome.status}`;
    try {
      const parsed = JSON.parse(outcome.text) as { error?: Record<string, unknown> };
      const error = parsed.error ?? {};
      const keys = Object.keys(error).sort().join(',');
      if (keys !== 'code,message,param,type') return `error keys ${keys}`;
      if (typeof error.message !== 'string' || error.type !== 'invalid_request_error') return 'error fields';
    } catch {
      return 'body is not JSON';
    }
    return null;
  }

  it.each<[Endpoint, Corpus]>([
    ['/v1/chat/completions', 'plain'],
    ['/v1/chat/completions', 'tools'],
    ['/v1/images/generations', 'plain'],
  ])(
    `answers ${RUNS} generated bodies to %s (%s corpus) with 4xx errors in the error shape`,
    async (endpoint, corpus) => {
      const samples = fc.sample(bodies(endpoint, corpus), { numRuns: RUNS, seed: SEED });
      const statuses = new Map<number, number>();
      const failures: string[] = [];
      let next = 0;
      const lane = async (): Promise<void> => {
        while (next < samples.length) {
          const body = samples[next++]!;
          const outcome = await send(endpoint, body);
          statuses.set(outcome.status, (statuses.get(outcome.status) ?? 0) + 1);
          const problem = problemWith(outcome);
          if (problem && failures.length < 5) {
            failures.push(`${problem}: ${body.slice(0, 300)} -> ${outcome.text.slice(0, 300)}`);
          }
        }
      };
      await Promise.all(Array.from({ length: CONCURRENCY }, lane));
      expect({ seed: SEED, failures }).toEqual({ seed: SEED, failures: [] });
      // The generator reaches every kind of refusal, so the property is not vacuous.
      expect([...statuses.keys()]).toEqual(expect.arrayContaining([400, 413]));
      for (const [app, child] of stack.processes) expect([app, child.exitCode]).toEqual([app, null]);
      const valid = await send(
        endpoint,
        JSON.stringify((corpus === 'tools' ? VALID_WITH_TOOLS : VALID[endpoint])()),
      );
      expect(valid.status).toBe(200);
    },
    240_000,
  );
});
