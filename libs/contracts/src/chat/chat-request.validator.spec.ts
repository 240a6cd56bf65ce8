import { expectRejectedParam, rejectionOf } from '@mgw/testing';
import type { GatewayError } from '../errors/gateway-error';
import { JSON_SCHEMA_LIMITS } from '../dto/json-schema.bounds';
import { REQUEST_SIZE_DEFAULTS } from '../dto/request-size.limits';
import { CHAT_PARAMETERS } from './chat-parameter-support';
import { CHAT_COMPLETION_REQUEST, type ChatCompletionRequest } from './chat-request.schema';
import { validateChatRequest } from './chat-request.validator';

const base = (): Record<string, unknown> => ({
  model: 'sim-chat',
  messages: [{ role: 'user', content: 'Hello' }],
});

function validate(body: unknown): ChatCompletionRequest {
  return validateChatRequest(body);
}

function withField(field: string, value: unknown): Record<string, unknown> {
  return { ...base(), [field]: value };
}

const rejection = (body: unknown): GatewayError => rejectionOf(validate, body);
const expectRejected = (body: unknown, param: string): GatewayError =>
  expectRejectedParam(validate, body, param);

describe('validateChatRequest', () => {
  it('accepts a minimal request and returns the body itself', () => {
    const body = base();
    const dto = validate(body);
    expect(dto).toBe(body);
    expect(dto.model).toBe('sim-chat');
    expect(dto.messages).toHaveLength(1);
    expect(dto.messages[0]!.role).toBe('user');
    expect(dto.messages[0]!.content).toBe('Hello');
  });

  describe.each([
    { field: 'temperature', ok: [0, 2], bad: [-0.0001, 2.0001] },
    { field: 'top_p', ok: [0, 1], bad: [-0.01, 1.01] },
    { field: 'presence_penalty', ok: [-2, 2], bad: [-2.01, 2.01] },
    { field: 'frequency_penalty', ok: [-2, 2], bad: [-2.01, 2.01] },
  ])('$field bounds', ({ field, ok, bad }) => {
    it.each(ok)(`accepts ${field}=%p`, (value) => {
      expect(validate(withField(field, value))[field as keyof ChatCompletionRequest]).toBe(value);
    });

    it.each(bad)(`rejects ${field}=%p`, (value) => {
      const error = expectRejected(withField(field, value), field);
      expect(error.message).toContain('expected a number between');
      expect(error.message).toContain(String(value));
    });
  });

  describe('n', () => {
    it.each([1, 10])('accepts n=%p', (value) => {
      expect(validate(withField('n', value)).n).toBe(value);
    });

    it.each([0, 11, 1.5])('rejects n=%p', (value) => {
      const error = expectRejected(withField('n', value), 'n');
      expect(error.message).toContain('expected an integer between 1 and 10');
    });
  });

  describe.each(['max_tokens', 'max_completion_tokens'])('%s', (field) => {
    it.each([1, 1_000_000])(`accepts ${field}=%p`, (value) => {
      expect(validate(withField(field, value))[field as keyof ChatCompletionRequest]).toBe(value);
    });

    it.each([0, 2.5, 1_000_001, -1])(`rejects ${field}=%p`, (value) => {
      const error = expectRejected(withField(field, value), field);
      expect(error.message).toContain('expected an integer between 1 and 1000000');
    });
  });

  describe('seed', () => {
    it.each([0, Number.MAX_SAFE_INTEGER, Number.MIN_SAFE_INTEGER])('accepts seed=%p', (value) => {
      expect(validate(withField('seed', value)).seed).toBe(value);
    });

    it.each([1.5, Number.MAX_SAFE_INTEGER + 2])('rejects seed=%p', (value) => {
      expectRejected(withField('seed', value), 'seed');
    });
  });

  describe.each([
    { field: 'user', max: 256 },
    { field: 'model', max: 256 },
  ])('$field length', ({ field, max }) => {
    it(`accepts ${max} characters and rejects ${max + 1}`, () => {
      expect(validate(withField(field, 'u'.repeat(max)))[field as keyof ChatCompletionRequest]).toBe(
        'u'.repeat(max),
      );
      const error = expectRejected(withField(field, 'u'.repeat(max + 1)), field);
      expect(error.message).toContain(`at most ${max} characters`);
    });
  });

  it.each([[[[]]], [[{ role: 'user', content: 'hi' }]], ['hi'], [null], [7]])(
    'rejects %p in place of a message (found by the fuzz suite)',
    (message) => {
      expectRejected(withField('messages', [{ role: 'user', content: 'ok' }, message]), 'messages[1]');
    },
  );

  it('rejects an empty model id', () => {
    expect(expectRejected(withField('model', ''), 'model').message).toContain(
      'expected a non-empty model id',
    );
  });

  describe('stop', () => {
    it('accepts a single string', () => {
      expect(validate(withField('stop', 'END')).stop).toBe('END');
    });

    it.each([[['a']], [['a', 'b', 'c', 'd']]])('accepts an array of %p', (stop) => {
      expect(validate(withField('stop', stop)).stop).toEqual(stop);
    });

    it('rejects an empty array', () => {
      const error = expectRejected(withField('stop', []), 'stop');
      expect(error.message).toContain('between 1 and 4');
      expect(error.message).toContain('got 0');
    });

    it('rejects five stop sequences', () => {
      const error = expectRejected(withField('stop', ['a', 'b', 'c', 'd', 'e']), 'stop');
      expect(error.message).toContain('got 5');
    });

    it.each([[[1]], [['a', null]], [['a', { s: 'x' }]]])('rejects non-string items %p', (stop) => {
      expectRejected(withField('stop', stop), 'stop');
    });

    it('accepts a 256-character stop sequence and rejects 257 characters or an empty one', () => {
      expect(validate(withField('stop', ['s'.repeat(256)])).stop).toEqual(['s'.repeat(256)]);
      expectRejected(withField('stop', ['s'.repeat(257)]), 'stop');
      expectRejected(withField('stop', 's'.repeat(257)), 'stop');
      expectRejected(withField('stop', ''), 'stop');
    });

    it('rejects a non-string, non-array stop', () => {
      const error = expectRejected(withField('stop', 42), 'stop');
      expect(error.message).toContain('expected a string or an array of strings');
    });
  });

  describe('messages', () => {
    it('rejects an empty array', () => {
      const error = expectRejected({ model: 'm', messages: [] }, 'messages');
      expect(error.message).toContain('expected a non-empty array of messages');
    });

    it('rejects a missing messages field', () => {
      const error = expectRejected({ model: 'm' }, 'messages');
      expect(error.message).toBe(`Invalid 'messages': expected an array of messages, got undefined.`);
    });

    it('rejects an object in place of the messages array', () => {
      const error = expectRejected({ model: 'm', messages: { role: 'user', content: 'x' } }, 'messages');
      expect(error.message).toContain('expected an array of messages');
    });

    // SOURCE BUG (reported): validate-dto.ts ranks 'nestedValidation' above 'isArray', so a string in place
    // of the messages array is reported as "expected an object, got "hi"" although an array is required.
    it('rejects a string in place of the messages array, saying an array is expected', () => {
      const error = expectRejected({ model: 'm', messages: 'hi' }, 'messages');
      expect(error.message).toBe(`Invalid 'messages': expected an array of messages, got "hi".`);
    });

    it('accepts 4096 messages and rejects 4097', () => {
      const many = (count: number) => Array.from({ length: count }, () => ({ role: 'user', content: 'x' }));
      expect(validate({ messages: many(4096) }).messages).toHaveLength(4096);
      const error = expectRejected({ messages: many(4097) }, 'messages');
      expect(error.message).toContain('expected at most 4096 messages');
    });

    it.each(['system', 'user', 'assistant', 'developer'])('accepts role %p', (role) => {
      expect(validate({ messages: [{ role, content: 'x' }] }).messages[0]!.role).toBe(role);
    });

    it('rejects an unknown role naming messages[0].role and the roles it accepts', () => {
      const error = expectRejected({ messages: [{ role: 'function', content: 'x' }] }, 'messages[0].role');
      expect(error.message).toContain('expected one of system, user, assistant, developer, tool');
      expect(error.message).toContain('"function"');
    });

    it('names the index of the offending message', () => {
      expectRejected(
        {
          messages: [
            { role: 'user', content: 'a' },
            { role: 'robot', content: 'b' },
          ],
        },
        'messages[1].role',
      );
    });

    it('rejects a missing role', () => {
      expectRejected({ messages: [{ content: 'x' }] }, 'messages[0].role');
    });

    it('accepts content as text and image_url parts', () => {
      const content = [
        { type: 'text', text: 'x' },
        { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } },
      ];
      const dto = validate({ messages: [{ role: 'user', content }] });
      expect(dto.messages[0]!.content).toEqual(content);
    });

    it('accepts an image_url part with a valid detail', () => {
      const content = [{ type: 'image_url', image_url: { url: 'https://x/y.png', detail: 'low' } }];
      expect(validate({ messages: [{ role: 'user', content }] }).messages[0]!.content).toEqual(content);
    });

    it.each([
      ['an empty parts array', [], 'expected at least one content part'],
      [
        'a part of unknown type',
        [{ type: 'audio', data: 'x' }],
        "content[0].type: expected 'text' or 'image_url'",
      ],
      ['a text part without text', [{ type: 'text' }], 'content[0].text: expected a string, got undefined'],
      [
        'a text part with non-string text',
        [{ type: 'text', text: 5 }],
        'content[0].text: expected a string, got 5',
      ],
      [
        'an image_url part without image_url',
        [{ type: 'image_url' }],
        'content[0].image_url: expected an object',
      ],
      [
        'an image_url part with an empty url',
        [{ type: 'image_url', image_url: { url: '' } }],
        'content[0].image_url.url: expected a non-empty string',
      ],
      [
        'an image_url part with a bad detail',
        [{ type: 'image_url', image_url: { url: 'u', detail: 'max' } }],
        'content[0].image_url.detail: expected one of auto, low, high, got "max"',
      ],
      [
        'an image_url part with an extra field',
        [{ type: 'image_url', image_url: { url: 'u', foo: 1 } }],
        "content[0].image_url: unrecognized field 'foo'",
      ],
      [
        'a text part with an extra field',
        [{ type: 'text', text: 'x', foo: 1 }],
        "content[0]: unrecognized field 'foo'",
      ],
      ['a part that is a string', ['x'], 'content[0]: expected a content part object, got "x"'],
      ['a part that is null', [null], 'content[0]: expected a content part object, got null'],
      ['content that is a number', 5, 'expected a string or an array of content parts, got 5'],
      ['content that is null', null, 'expected a string or an array of content parts, got null'],
      ['content that is missing', undefined, 'expected a string or an array of content parts, got undefined'],
    ])('rejects %s with param messages[0].content', (_label, content, fragment) => {
      const message: Record<string, unknown> = { role: 'user' };
      if (content !== undefined) message.content = content;
      const error = expectRejected({ messages: [message] }, 'messages[0].content');
      expect(error.message).toContain("Invalid 'messages[0].content': ");
      expect(error.message).toContain(fragment);
    });

    it('points at the offending part in the message text', () => {
      const error = expectRejected(
        {
          messages: [
            {
              role: 'user',
              content: [
                { type: 'text', text: 'ok' },
                { type: 'text', text: 1 },
              ],
            },
          ],
        },
        'messages[0].content',
      );
      expect(error.message).toContain('content[1].text');
    });

    it('rejects an unknown field inside a message', () => {
      const error = expectRejected({ messages: [{ role: 'user', content: 'x', foo: 1 }] }, 'messages[0].foo');
      expect(error.message).toBe('Unrecognized request argument supplied: messages[0].foo');
    });

    it('rejects a message that is not an object', () => {
      expectRejected({ messages: ['hello'] }, 'messages[0]');
    });

    it('accepts a name of up to 64 characters and rejects a longer one', () => {
      expect(
        validate({ messages: [{ role: 'user', content: 'x', name: 'a'.repeat(64) }] }).messages[0]!.name,
      ).toBe('a'.repeat(64));
      expectRejected(
        { messages: [{ role: 'user', content: 'x', name: 'a'.repeat(65) }] },
        'messages[0].name',
      );
    });
  });

  describe('wrong types', () => {
    it.each([
      ['temperature', '1'],
      ['stream', 'true'],
      ['n', '2'],
      ['max_tokens', '10'],
      ['top_p', true],
      ['user', 1],
      ['model', 7],
      ['seed', 'x'],
    ])('rejects %s=%p naming the param and saying "expected"', (field, value) => {
      const error = expectRejected(withField(field, value), field);
      expect(error.message).toContain('expected');
      expect(error.message).toContain(JSON.stringify(value));
    });

    it('does not coerce numeric strings', () => {
      const error = expectRejected(withField('temperature', '1'), 'temperature');
      expect(error.message).toBe(`Invalid 'temperature': expected a number between 0 and 2, got "1".`);
    });

    it('rejects a stream_options that is not an object', () => {
      expectRejected(withField('stream_options', 'yes'), 'stream_options');
    });

    it('rejects a non-boolean stream_options.include_usage', () => {
      expectRejected(withField('stream_options', { include_usage: 'yes' }), 'stream_options.include_usage');
    });

    it('rejects an unknown field inside stream_options', () => {
      const error = expectRejected(withField('stream_options', { foo: true }), 'stream_options.foo');
      expect(error.message).toBe('Unrecognized request argument supplied: stream_options.foo');
    });

    it.each([NaN, Infinity])('rejects temperature=%p', (value) => {
      expectRejected(withField('temperature', value), 'temperature');
    });
  });

  it('accepts well-typed optional fields', () => {
    const dto = validate({
      ...base(),
      stream: true,
      stream_options: { include_usage: true },
      max_completion_tokens: 5,
      seed: -3,
      user: 'someone',
    });
    expect(dto.stream).toBe(true);
    expect(dto.stream_options?.include_usage).toBe(true);
    expect(dto.max_completion_tokens).toBe(5);
    expect(dto.seed).toBe(-3);
    expect(dto.user).toBe('someone');
  });

  it('rejects an unknown top-level field with the OpenAI message', () => {
    const error = expectRejected(withField('foo', 1), 'foo');
    expect(error.message).toBe('Unrecognized request argument supplied: foo');
  });

  it.each([
    'temperature',
    'top_p',
    'n',
    'max_tokens',
    'max_completion_tokens',
    'stop',
    'presence_penalty',
    'frequency_penalty',
    'seed',
    'user',
    'stream',
    'stream_options',
    'model',
  ])('accepts null for optional %s', (field) => {
    expect(() => validate(withField(field, null))).not.toThrow();
  });

  it.each([
    ['an array', [base()], 'an array of 1'],
    ['a string', 'hello', '"hello"'],
    ['null', null, 'null'],
    ['a number', 3, '3'],
  ])('rejects a body that is %s', (_label, body, description) => {
    const error = rejection(body);
    expect(error.param).toBeNull();
    expect(error.message).toBe(`The request body must be a JSON object, got ${description}.`);
  });
});

describe('validateChatRequest: tools, structured outputs, logprobs and the other OpenAI parameters', () => {
  const weather = (name = 'get_weather', extra: Record<string, unknown> = {}) => ({
    type: 'function',
    function: {
      name,
      description: 'Weather in a city',
      parameters: {
        type: 'object',
        properties: { city: { type: 'string' }, days: { type: 'array', items: { type: 'integer' } } },
        required: ['city'],
      },
      ...extra,
    },
  });
  const call = (id = 'call_1', name = 'get_weather') => ({
    id,
    type: 'function',
    function: { name, arguments: '{"city":"Paris"}' },
  });
  const toolLoop = (): Record<string, unknown>[] => [
    { role: 'user', content: 'Weather in Paris?' },
    { role: 'assistant', content: null, tool_calls: [call()] },
    { role: 'tool', tool_call_id: 'call_1', content: '{"temp": 21}' },
  ];

  describe('accepted', () => {
    it('keeps tools, tool_choice and parallel_tool_calls with the schema intact (arrays stay arrays)', () => {
      const dto = validate({
        ...base(),
        tools: [weather(), weather('get_time', { strict: true })],
        tool_choice: { type: 'function', function: { name: 'get_time' } },
        parallel_tool_calls: false,
      });
      expect(dto.tools).toHaveLength(2);
      expect(dto.tools![0]!.function.parameters).toEqual(weather().function.parameters);
      expect(Array.isArray(dto.tools![0]!.function.parameters!.required)).toBe(true);
      expect(dto.tool_choice).toEqual({ type: 'function', function: { name: 'get_time' } });
      expect(dto.parallel_tool_calls).toBe(false);
    });

    it.each(['none', 'auto', 'required'])('accepts tool_choice %p with tools', (choice) => {
      expect(validate({ ...base(), tools: [weather()], tool_choice: choice }).tool_choice).toBe(choice);
    });

    it('accepts a function without parameters or description, and strict null', () => {
      expect(() =>
        validate({ ...base(), tools: [{ type: 'function', function: { name: 'ping', strict: null } }] }),
      ).not.toThrow();
    });

    it('accepts a whole tool loop: assistant tool_calls with null or absent content, then the tool result', () => {
      expect(validate({ ...base(), messages: toolLoop() }).messages[2]!.tool_call_id).toBe('call_1');
      const absent = toolLoop();
      absent[1] = { role: 'assistant', tool_calls: [call()] };
      expect(() => validate({ ...base(), messages: absent })).not.toThrow();
    });

    it('accepts a tool result as text parts', () => {
      const messages = toolLoop();
      messages[2] = { role: 'tool', tool_call_id: 'call_1', content: [{ type: 'text', text: '21' }] };
      expect(() => validate({ ...base(), messages })).not.toThrow();
    });

    it('accepts refusal on assistant messages (null, or the refusal text without content)', () => {
      const messages = [
        { role: 'user', content: 'a' },
        { role: 'assistant', content: 'b', refusal: null },
        { role: 'user', content: 'c' },
        { role: 'assistant', content: null, refusal: 'I cannot help with that.' },
        { role: 'user', content: 'd' },
      ];
      expect(validate({ ...base(), messages }).messages[3]!.refusal).toBe('I cannot help with that.');
    });

    it.each([
      { type: 'text' },
      { type: 'json_object' },
      { type: 'json_schema', json_schema: { name: 'answer' } },
      {
        type: 'json_schema',
        json_schema: {
          name: 'answer',
          description: 'd',
          strict: true,
          schema: { type: 'object', properties: { a: { type: 'string' } }, required: ['a'] },
        },
      },
    ])('accepts response_format %j', (format) => {
      expect(validate({ ...base(), response_format: format }).response_format).toEqual(format);
    });

    it('accepts logprobs with top_logprobs 0 and 20', () => {
      expect(validate({ ...base(), logprobs: true, top_logprobs: 0 }).top_logprobs).toBe(0);
      expect(validate({ ...base(), logprobs: true, top_logprobs: 20 }).top_logprobs).toBe(20);
      expect(validate({ ...base(), logprobs: false }).logprobs).toBe(false);
    });

    it('accepts the advisory and per-model parameters in their documented shapes', () => {
      const dto = validate({
        ...base(),
        metadata: { team: 'search', run: '7' },
        service_tier: 'auto',
        prompt_cache_key: 'k',
        prompt_cache_retention: '24h',
        safety_identifier: 'user-hash',
        store: false,
        logit_bias: { '50256': -100, '7': 5.5 },
        reasoning_effort: 'low',
        verbosity: 'high',
        prediction: { type: 'content', content: 'predicted' },
        modalities: ['text'],
        stream_options: { include_obfuscation: false },
      });
      expect(dto.logit_bias).toEqual({ '50256': -100, '7': 5.5 });
      expect(dto.metadata).toEqual({ team: 'search', run: '7' });
    });
  });

  describe('refused with the exact path', () => {
    const tools = (list: unknown[]) => ({ ...base(), tools: list });
    it.each<[string, Record<string, unknown>, string, string]>([
      ['tools not an array', { ...base(), tools: {} }, 'tools', 'expected an array of tools'],
      ['empty tools', tools([]), 'tools', 'non-empty'],
      ['129 tools', tools(Array.from({ length: 129 }, (_, i) => weather(`f${i}`))), 'tools', 'at most 128'],
      ['a tool that is not an object', tools([weather(), 'f']), 'tools[1]', 'expected an object'],
      [
        'a tool of another type',
        tools([{ type: 'retrieval', function: { name: 'x' } }]),
        'tools[0].type',
        "'function'",
      ],
      [
        'a custom tool',
        tools([{ type: 'custom', custom: { name: 'x' } }]),
        'tools[0].custom',
        'Unrecognized',
      ],
      ['a missing function', tools([{ type: 'function' }]), 'tools[0].function', 'expected an object'],
      [
        'a bad name',
        tools([weather('a'), weather('b'), weather('has space')]),
        'tools[2].function.name',
        'a name of 1 to 64 characters',
      ],
      ['a 65-character name', tools([weather('x'.repeat(65))]), 'tools[0].function.name', '1 to 64'],
      ['a duplicate name', tools([weather('a'), weather('a')]), 'tools[1].function.name', 'earlier tool'],
      [
        'an unknown field in function',
        tools([weather('a', { examples: [] })]),
        'tools[0].function.examples',
        'Unrecognized request argument',
      ],
      [
        'a non-boolean strict',
        tools([weather('a', { strict: 'yes' })]),
        'tools[0].function.strict',
        'boolean',
      ],
      [
        'parameters not an object',
        tools([weather('a', { parameters: [] })]),
        'tools[0].function.parameters',
        'JSON Schema object',
      ],
      [
        'parameters of type string',
        tools([weather('a', { parameters: { type: 'string' } })]),
        'tools[0].function.parameters',
        "type 'object'",
      ],
      [
        'tool_choice naming no tool',
        { ...base(), tools: [weather()], tool_choice: { type: 'function', function: { name: 'nope' } } },
        'tool_choice',
        'not one of',
      ],
      ['tool_choice without tools', { ...base(), tool_choice: 'auto' }, 'tool_choice', "when 'tools'"],
      [
        'parallel_tool_calls without tools',
        { ...base(), parallel_tool_calls: true },
        'parallel_tool_calls',
        "when 'tools'",
      ],
      [
        'an unknown tool_choice mode',
        { ...base(), tools: [weather()], tool_choice: 'any' },
        'tool_choice',
        '"any"',
      ],
      [
        'a tool_choice of another type',
        { ...base(), tools: [weather()], tool_choice: { type: 'allowed_tools' } },
        'tool_choice',
        "expected 'function'",
      ],
      [
        'a tool_choice without a name',
        { ...base(), tools: [weather()], tool_choice: { type: 'function', function: {} } },
        'tool_choice',
        'function.name',
      ],
      [
        'a non-boolean parallel_tool_calls',
        { ...base(), tools: [weather()], parallel_tool_calls: 1 },
        'parallel_tool_calls',
        'boolean',
      ],
      ['a response_format string', { ...base(), response_format: 'json' }, 'response_format', 'an object'],
      [
        'an unknown response_format type',
        { ...base(), response_format: { type: 'xml' } },
        'response_format.type',
        "'json_schema'",
      ],
      [
        'json_schema without json_schema',
        { ...base(), response_format: { type: 'json_schema' } },
        'response_format.json_schema',
        'expected an object',
      ],
      [
        'json_schema on a json_object format',
        { ...base(), response_format: { type: 'json_object', json_schema: { name: 'a' } } },
        'response_format.json_schema',
        "only allowed when type is 'json_schema'",
      ],
      [
        'a bad json_schema name',
        { ...base(), response_format: { type: 'json_schema', json_schema: { name: 'a b' } } },
        'response_format.json_schema.name',
        '1 to 64',
      ],
      [
        'a json_schema schema that is not an object',
        { ...base(), response_format: { type: 'json_schema', json_schema: { name: 'a', schema: true } } },
        'response_format.json_schema.schema',
        'JSON Schema object',
      ],
      [
        'an unknown field in json_schema',
        { ...base(), response_format: { type: 'json_schema', json_schema: { name: 'a', format: 1 } } },
        'response_format.json_schema.format',
        'Unrecognized',
      ],
      ['a non-boolean logprobs', { ...base(), logprobs: 'yes' }, 'logprobs', 'boolean'],
      [
        'top_logprobs 21',
        { ...base(), logprobs: true, top_logprobs: 21 },
        'top_logprobs',
        'between 0 and 20',
      ],
      [
        'top_logprobs -1',
        { ...base(), logprobs: true, top_logprobs: -1 },
        'top_logprobs',
        'between 0 and 20',
      ],
      ['top_logprobs 1.5', { ...base(), logprobs: true, top_logprobs: 1.5 }, 'top_logprobs', 'integer'],
      [
        'top_logprobs without logprobs',
        { ...base(), top_logprobs: 2 },
        'top_logprobs',
        "'logprobs' must be true",
      ],
      [
        'top_logprobs with logprobs false',
        { ...base(), logprobs: false, top_logprobs: 2 },
        'top_logprobs',
        'must be true',
      ],
      [
        'a logit_bias out of range',
        { ...base(), logit_bias: { '1': 101 } },
        'logit_bias',
        'between -100 and 100',
      ],
      [
        'a logit_bias key that is no token id',
        { ...base(), logit_bias: { a: 1 } },
        'logit_bias',
        'token ids',
      ],
      ['an unknown reasoning_effort', { ...base(), reasoning_effort: 'max' }, 'reasoning_effort', 'one of'],
      ['an unknown verbosity', { ...base(), verbosity: 'loud' }, 'verbosity', 'one of'],
      ['a prediction of another type', { ...base(), prediction: { type: 'x' } }, 'prediction', "'content'"],
      ['an unknown modality', { ...base(), modalities: ['video'] }, 'modalities', "'text' and 'audio'"],
      [
        '17 metadata pairs',
        { ...base(), metadata: Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, 'v'])) },
        'metadata',
        'at most 16',
      ],
      [
        '200,000 metadata pairs (counted before the body is copied)',
        {
          ...base(),
          metadata: Object.fromEntries(Array.from({ length: 200_000 }, (_, i) => [`k${i}`, 'v'])),
        },
        'metadata',
        'expected at most 16 key-value pairs, got 200000.',
      ],
      [
        '200,000 logit_bias entries (counted before the body is copied)',
        { ...base(), logit_bias: Object.fromEntries(Array.from({ length: 200_000 }, (_, i) => [`${i}`, 1])) },
        'logit_bias',
        'expected at most 1024 token biases, got 200000.',
      ],
      ['a metadata number', { ...base(), metadata: { a: 1 } }, 'metadata', 'a string'],
      ['an unknown service_tier', { ...base(), service_tier: 'gold' }, 'service_tier', 'one of'],
      ['a non-boolean store', { ...base(), store: 'no' }, 'store', 'boolean'],
      [
        'a 65-character safety_identifier',
        { ...base(), safety_identifier: 'x'.repeat(65) },
        'safety_identifier',
        '64',
      ],
      ['a bad function_call', { ...base(), function_call: 3 }, 'function_call', "'auto'"],
      ['functions not an array', { ...base(), functions: {} }, 'functions', 'an array'],
      [
        'a non-boolean include_obfuscation',
        { ...base(), stream_options: { include_obfuscation: 1 } },
        'stream_options.include_obfuscation',
        'boolean',
      ],
    ])('%s', (_label, body, param, text) => {
      const error = expectRejected(body, param);
      expect(error.message).toContain(text);
      expect(error.toBody().error).toMatchObject({ type: 'invalid_request_error', param });
    });
  });

  describe('message shapes refused with the exact path', () => {
    const withMessages = (...messages: unknown[]) => ({ ...base(), messages });
    it.each<[string, Record<string, unknown>, string, string]>([
      [
        'a tool message answering no earlier call',
        withMessages({ role: 'user', content: 'a' }, { role: 'tool', tool_call_id: 'call_9', content: 'x' }),
        'messages[1].tool_call_id',
        'answers no tool call',
      ],
      [
        'a tool message answering a later call',
        withMessages(
          { role: 'user', content: 'a' },
          { role: 'tool', tool_call_id: 'call_1', content: 'x' },
          { role: 'assistant', tool_calls: [call()] },
        ),
        'messages[1].tool_call_id',
        'answers no tool call',
      ],
      [
        'a tool message without tool_call_id',
        withMessages({ role: 'assistant', tool_calls: [call()] }, { role: 'tool', content: 'x' }),
        'messages[1].tool_call_id',
        'expected the id',
      ],
      [
        'a tool message without content',
        withMessages({ role: 'assistant', tool_calls: [call()] }, { role: 'tool', tool_call_id: 'call_1' }),
        'messages[1].content',
        'expected a string or an array',
      ],
      [
        'a tool result with an image',
        withMessages(
          { role: 'assistant', tool_calls: [call()] },
          { role: 'tool', tool_call_id: 'call_1', content: [{ type: 'image_url', image_url: { url: 'x' } }] },
        ),
        'messages[1].content',
        "expected 'text'",
      ],
      [
        'tool_calls on a user message',
        withMessages({ role: 'user', content: 'a', tool_calls: [call()] }),
        'messages[0].tool_calls',
        'only assistant messages',
      ],
      [
        'tool_call_id on a user message',
        withMessages({ role: 'user', content: 'a', tool_call_id: 'call_1' }),
        'messages[0].tool_call_id',
        'only tool messages',
      ],
      [
        'refusal on a user message',
        withMessages({ role: 'user', content: 'a', refusal: 'no' }),
        'messages[0].refusal',
        'only assistant messages',
      ],
      [
        'an assistant message with neither content nor calls',
        withMessages({ role: 'user', content: 'a' }, { role: 'assistant', content: null }),
        'messages[1].content',
        'expected content, tool_calls or a refusal',
      ],
      [
        'a user message with null content',
        withMessages({ role: 'user', content: null }),
        'messages[0].content',
        'expected a string',
      ],
      [
        'empty tool_calls',
        withMessages({ role: 'assistant', tool_calls: [] }),
        'messages[0].tool_calls',
        'non-empty',
      ],
      [
        'a tool call that is not an object',
        withMessages({ role: 'assistant', tool_calls: [call(), 7] }),
        'messages[0].tool_calls[1]',
        'expected an object',
      ],
      [
        'a tool call without an id',
        withMessages({
          role: 'assistant',
          tool_calls: [{ type: 'function', function: { name: 'f', arguments: '{}' } }],
        }),
        'messages[0].tool_calls[0].id',
        'a string',
      ],
      [
        'a tool call of another type',
        withMessages({ role: 'assistant', tool_calls: [{ ...call(), type: 'custom' }] }),
        'messages[0].tool_calls[0].type',
        "'function'",
      ],
      [
        'object arguments',
        withMessages(
          { role: 'user', content: 'a' },
          { role: 'user', content: 'b' },
          { role: 'user', content: 'c' },
          {
            role: 'assistant',
            tool_calls: [{ id: 'c', type: 'function', function: { name: 'f', arguments: {} } }],
          },
        ),
        'messages[3].tool_calls[0].function.arguments',
        'the JSON text of the arguments',
      ],
      [
        'an unknown field in a tool call',
        withMessages({ role: 'assistant', tool_calls: [{ ...call(), index: 0 }] }),
        'messages[0].tool_calls[0].index',
        'Unrecognized',
      ],
    ])('%s', (_label, body, param, text) => {
      const error = expectRejected(body, param);
      expect(error.message).toContain(text);
    });
  });

  describe('JSON Schema bounds', () => {
    const nested = (levels: number): Record<string, unknown> => {
      let schema: Record<string, unknown> = { type: 'string' };
      for (let i = 0; i < levels; i++) schema = { type: 'object', properties: { a: schema } };
      return schema;
    };
    const withSchema = (schema: unknown) => ({
      ...base(),
      response_format: { type: 'json_schema', json_schema: { name: 's', schema } },
    });

    it(`accepts ${JSON_SCHEMA_LIMITS.maxNesting} levels of nesting and refuses one more`, () => {
      // The root object is level 0; each `properties` adds one.
      expect(() => validate(withSchema(nested(JSON_SCHEMA_LIMITS.maxNesting)))).not.toThrow();
      const error = expectRejected(
        withSchema(nested(JSON_SCHEMA_LIMITS.maxNesting + 1)),
        'response_format.json_schema.schema',
      );
      expect(error.message).toContain(`at most ${JSON_SCHEMA_LIMITS.maxNesting} levels`);
    });

    it('counts items and anyOf branches as it walks', () => {
      let schema: Record<string, unknown> = { type: 'string' };
      for (let i = 0; i <= JSON_SCHEMA_LIMITS.maxNesting; i++)
        schema = { anyOf: [{ type: 'array', items: schema }] };
      expectRejected(withSchema(schema), 'response_format.json_schema.schema');
    });

    it(`refuses more than ${JSON_SCHEMA_LIMITS.maxProperties} properties in total`, () => {
      const half = (offset: number) =>
        Object.fromEntries(Array.from({ length: 2501 }, (_, i) => [`p${i + offset}`, {}]));
      const schema = {
        type: 'object',
        properties: { a: { type: 'object', properties: half(0) }, ...half(10_000) },
      };
      const error = expectRejected(withSchema(schema), 'response_format.json_schema.schema');
      expect(error.message).toContain(`at most ${JSON_SCHEMA_LIMITS.maxProperties} properties`);
    });

    it(`refuses a schema over ${JSON_SCHEMA_LIMITS.maxBytes} bytes serialized, in tools too`, () => {
      const big = { type: 'object', description: 'x'.repeat(JSON_SCHEMA_LIMITS.maxBytes) };
      const error = expectRejected(
        { ...base(), tools: [weather('a'), { type: 'function', function: { name: 'b', parameters: big } }] },
        'tools[1].function.parameters',
      );
      expect(error.message).toContain(`at most ${JSON_SCHEMA_LIMITS.maxBytes} bytes`);
    });
  });
});

describe('one schema, one parameter table', () => {
  const fields = Object.keys(CHAT_COMPLETION_REQUEST.shape);

  it('lists every field of the schema in the parameter table, and nothing else at the top level', () => {
    const table = Object.keys(CHAT_PARAMETERS).filter((name) => !name.includes('.'));
    expect([...table].sort()).toEqual([...fields].sort());
  });

  it.each(fields.filter((field) => field !== 'messages'))(
    'accepts %s alone (null), so it is never an unknown field',
    (field) => {
      expect(() => validate(withField(field, null))).not.toThrow();
    },
  );
});

describe('messages valid as sent', () => {
  const parts = (count: number) => Array.from({ length: count }, () => ({ type: 'text', text: '' }));
  const manyParts = () => ({
    model: 'sim-chat',
    messages: Array.from({ length: 4096 }, () => ({ role: 'user', content: parts(95) })),
  });

  it('keeps a valid body of 4096 messages × 95 parts as sent: no message or part is copied', () => {
    const plain = manyParts();
    const dto = validateChatRequest(plain, { ...REQUEST_SIZE_DEFAULTS, textChars: 1000 });
    expect(dto).toBe(plain);
    expect(dto.messages).toBe(plain.messages);
    expect(dto.messages[4095]!.content).toBe(plain.messages[4095]!.content);
  });

  it('keeps the messages of an extended body as sent too', () => {
    const plain: Record<string, unknown> = { ...base(), logprobs: true };
    const dto = validate(plain);
    expect(dto.messages).toBe(plain['messages']);
  });

  it('keeps the messages of a tool loop and each content as sent', () => {
    const content = parts(3);
    const plain = {
      messages: [
        { role: 'user', content },
        { role: 'assistant', content: null, refusal: 'No.' },
      ],
    };
    const dto = validate(plain);
    expect(dto.messages).toBe(plain.messages);
    expect(dto.messages[0]!.content).toBe(content);
    expect(dto.messages[1]!.content).toBeNull();
  });

  // The first problem and its words are what they always were, wherever it is among the messages.
  const valid = Array.from({ length: 3 }, () => ({ role: 'user', content: parts(2) }));
  it.each<[string, unknown, string, string]>([
    [
      'a part after valid messages',
      { role: 'user', content: [...parts(4), { type: 'text', text: 1 }] },
      'messages[3].content',
      `Invalid 'messages[3].content': content[4].text: expected a string, got 1.`,
    ],
    [
      'a role',
      { role: 'robot', content: 'x' },
      'messages[3].role',
      `Invalid 'messages[3].role': expected one of system, user, assistant, developer, tool, got "robot".`,
    ],
    [
      'a name',
      { role: 'user', content: 'x', name: 'n'.repeat(65) },
      'messages[3].name',
      `Invalid 'messages[3].name': expected a string of at most 64 characters, got a string of length 65.`,
    ],
    [
      'an unknown field',
      { role: 'user', content: 'x', colour: 'red' },
      'messages[3].colour',
      'Unrecognized request argument supplied: messages[3].colour',
    ],
    [
      'a tool result with an image',
      { role: 'tool', content: [{ type: 'image_url', image_url: { url: 'u' } }] },
      'messages[3].content',
      `Invalid 'messages[3].content': content[0].type: expected 'text' (a tool result is text), got "image_url".`,
    ],
    [
      'a message that is a list',
      ['user', 'x'],
      'messages[3]',
      `Invalid 'messages[3]': expected an object, got an array of 2.`,
    ],
  ])('refuses %s as it always has', (_what, message, param, text) => {
    const error = rejection({ messages: [...valid, message, ...valid] });
    expect(error.param).toBe(param);
    expect(error.message).toBe(text);
  });

  it('reports a field before the messages when the messages are valid as sent', () => {
    expect(rejection({ ...base(), temperature: 3 }).param).toBe('temperature');
    expect(rejection({ ...base(), colour: 'red' }).message).toBe(
      'Unrecognized request argument supplied: colour',
    );
  });

  it('still refuses an assistant message with neither content nor tool calls across fields', () => {
    const error = rejection({
      messages: [
        { role: 'user', content: 'x' },
        { role: 'assistant', content: null },
      ],
    });
    expect(error.param).toBe('messages[1].content');
  });
});
