import { Stack } from './support/stack';

interface ErrorBody {
  error: { message: string; type: string; param: string | null; code: string | null };
}

const weather = (name = 'get_weather') => ({
  type: 'function',
  function: {
    name,
    description: 'Current weather in a city',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
});
const call = {
  id: 'call_1',
  type: 'function',
  function: { name: 'get_weather', arguments: '{"city":"Paris"}' },
};
const user = { role: 'user', content: 'Weather in Paris?' };
const chat = (extra: Record<string, unknown>, model = 'sim-chat') => ({ model, messages: [user], ...extra });

/**
 * The request edge of tools, structured outputs and logprobs over real HTTP: each malformed shape is a 400
 * in OpenAI's error shape naming the exact path, and a parameter a model's backend cannot honour is refused
 * per model before anything is enqueued. The llamacpp and openai models are declared scale-to-zero with no
 * worker, so they are listed and resolvable while nothing could ever answer them.
 */
describe('HTTP contract: tools, structured outputs, logprobs and the other OpenAI parameters', () => {
  let stack: Stack;

  beforeAll(async () => {
    stack = await Stack.start({
      catalog: {
        models: [
          { id: 'sim-chat', type: 'chat', owned_by: 'model-gateway', backend: { kind: 'simulator' } },
          {
            id: 'llama-chat',
            type: 'chat',
            owned_by: 'local',
            backend: { kind: 'llamacpp', modelPath: '/nonexistent.gguf' },
            scaleToZero: { maxWaitMs: 1000 },
          },
          {
            id: 'up-chat',
            type: 'chat',
            owned_by: 'upstream',
            backend: { kind: 'openai', baseUrl: 'http://127.0.0.1:9/v1' },
            scaleToZero: { maxWaitMs: 1000 },
          },
          { id: 'sim-image', type: 'image', owned_by: 'model-gateway', backend: { kind: 'simulator' } },
        ],
      },
      appEnv: { 'chat-worker': { WORKER_MODELS: 'sim-chat' } },
      waitForModels: ['sim-chat', 'sim-image'],
    });
  });

  afterAll(async () => {
    await stack?.stop();
  });

  async function expectRefused(body: unknown, param: string, code: string | null = null): Promise<ErrorBody> {
    const res = await stack.post('/v1/chat/completions', body);
    const json = (await res.json()) as ErrorBody;
    expect({ status: res.status, param: json.error?.param }).toEqual({ status: 400, param });
    expect(Object.keys(json)).toEqual(['error']);
    expect(Object.keys(json.error).sort()).toEqual(['code', 'message', 'param', 'type']);
    expect(json.error.type).toBe('invalid_request_error');
    expect(json.error.code).toBe(code);
    return json;
  }

  it('serves a request that uses every new field on a model that supports them', async () => {
    const res = await stack.post(
      '/v1/chat/completions',
      chat({
        messages: [
          user,
          { role: 'assistant', content: null, refusal: null, tool_calls: [call] },
          { role: 'tool', tool_call_id: 'call_1', content: '{"temp_c": 21}' },
        ],
        tools: [weather(), weather('get_time')],
        tool_choice: 'auto',
        parallel_tool_calls: false,
        response_format: {
          type: 'json_schema',
          json_schema: { name: 'answer', schema: { type: 'object', properties: { a: { type: 'string' } } } },
        },
        logprobs: true,
        top_logprobs: 2,
        metadata: { team: 'search' },
        service_tier: 'auto',
        prompt_cache_key: 'k',
        safety_identifier: 'u-1',
        store: false,
        max_tokens: 8,
      }),
    );
    expect(res.status).toBe(200);
    expect(((await res.json()) as { object: string }).object).toBe('chat.completion');
  });

  it.each<[string, Record<string, unknown>, string]>([
    ['129 tools', chat({ tools: Array.from({ length: 129 }, (_, i) => weather(`f${i}`)) }), 'tools'],
    [
      'a bad third tool name',
      chat({ tools: [weather('a'), weather('b'), weather('c d')] }),
      'tools[2].function.name',
    ],
    [
      'a tool of another type',
      chat({ tools: [{ type: 'retrieval', function: { name: 'a' } }] }),
      'tools[0].type',
    ],
    [
      'parameters that are not an object schema',
      chat({ tools: [{ type: 'function', function: { name: 'a', parameters: { type: 'array' } } }] }),
      'tools[0].function.parameters',
    ],
    [
      'a tool_choice naming no tool',
      chat({ tools: [weather()], tool_choice: { type: 'function', function: { name: 'other' } } }),
      'tool_choice',
    ],
    ['a tool_choice without tools', chat({ tool_choice: 'required' }), 'tool_choice'],
    ['an unknown tool_choice', chat({ tools: [weather()], tool_choice: 'sometimes' }), 'tool_choice'],
    ['an unknown response_format type', chat({ response_format: { type: 'yaml' } }), 'response_format.type'],
    [
      'a json_schema without a name',
      chat({ response_format: { type: 'json_schema', json_schema: { schema: {} } } }),
      'response_format.json_schema.name',
    ],
    [
      'a schema nested 11 levels',
      chat({
        response_format: {
          type: 'json_schema',
          json_schema: {
            name: 'deep',
            schema: Array.from({ length: 11 }).reduce<Record<string, unknown>>(
              (inner) => ({ type: 'object', properties: { a: inner } }),
              { type: 'string' },
            ),
          },
        },
      }),
      'response_format.json_schema.schema',
    ],
    ['top_logprobs 21', chat({ logprobs: true, top_logprobs: 21 }), 'top_logprobs'],
    ['top_logprobs without logprobs', chat({ top_logprobs: 1 }), 'top_logprobs'],
    [
      'a tool result answering no call',
      chat({ messages: [user, { role: 'tool', tool_call_id: 'call_x', content: 'r' }] }),
      'messages[1].tool_call_id',
    ],
    [
      'object arguments in an echoed call',
      chat({
        messages: [
          user,
          user,
          user,
          { role: 'assistant', tool_calls: [{ ...call, function: { name: 'get_weather', arguments: {} } }] },
        ],
      }),
      'messages[3].tool_calls[0].function.arguments',
    ],
    [
      'an assistant message with nothing in it',
      chat({ messages: [user, { role: 'assistant' }] }),
      'messages[1].content',
    ],
  ])('refuses %s naming %s', async (_label, body, param) => {
    const { error } = await expectRefused(body, param);
    expect(error.message).toContain(param);
  });

  it.each<[string, Record<string, unknown>]>([
    ['logit_bias', { logit_bias: { '42': 10 } }],
    ['reasoning_effort', { reasoning_effort: 'low' }],
    ['functions', { functions: [{ name: 'f' }] }],
    ['web_search_options', { web_search_options: {} }],
    ['modalities', { modalities: ['text', 'audio'] }],
    ['stream_options.include_obfuscation', { stream: true, stream_options: { include_obfuscation: true } }],
  ])('refuses %s on the simulator, naming the model and the parameter', async (param, extra) => {
    const { error } = await expectRefused(chat(extra), param, 'unsupported_parameter');
    expect(error.message).toMatch(new RegExp(`^The model \`sim-chat\` does not support \`${param}\`\\.`));
  });

  it('refuses logit_bias on the llamacpp model before enqueueing (waiting for a worker would end in a 503)', async () => {
    const { error } = await expectRefused(
      chat({ logit_bias: { '50256': -100 } }, 'llama-chat'),
      'logit_bias',
      'unsupported_parameter',
    );
    expect(error.message).toBe('The model `llama-chat` does not support `logit_bias`.');
  });

  it('lists what each model supports in supported_parameters, keeping the seed fields as they are', async () => {
    const res = await fetch(`${stack.baseUrl}/v1/models`, { headers: stack.headers() });
    const { data } = (await res.json()) as { data: Array<Record<string, unknown>> };
    const byId = new Map(data.map((model) => [model.id as string, model]));
    const sim = byId.get('sim-chat')!;
    expect(Object.keys(sim).sort()).toEqual(
      ['capabilities', 'created', 'id', 'object', 'owned_by', 'supported_parameters', 'type'].sort(),
    );
    expect(sim.capabilities).toEqual({
      inputCapabilities: { text: true, image: true },
      outputCapabilities: { text: true, image: false },
    });
    expect(sim.supported_parameters).toEqual(
      expect.arrayContaining(['tools', 'response_format', 'logprobs']),
    );
    expect(sim.supported_parameters).not.toContain('logit_bias');
    expect(byId.get('llama-chat')!.supported_parameters).toEqual(
      expect.arrayContaining(['tools', 'response_format', 'logprobs']),
    );
    expect(byId.get('llama-chat')!.supported_parameters).not.toContain('logit_bias');
    expect(byId.get('up-chat')!.supported_parameters).toEqual(
      expect.arrayContaining(['tools', 'logprobs', 'logit_bias', 'reasoning_effort']),
    );
    expect(byId.get('sim-image')).not.toHaveProperty('supported_parameters');
  });
});
