import { expectRejectedParam, rejectionOf } from '@mgw/testing';
import type { GatewayError } from '../errors/gateway-error';
import { ChatCompletionRequestDto } from './chat-completion-request.dto';
import { validateDto } from './validate-dto';

const base = (): Record<string, unknown> => ({
  model: 'sim-chat',
  messages: [{ role: 'user', content: 'Hello' }],
});

function validate(body: unknown): ChatCompletionRequestDto {
  return validateDto(ChatCompletionRequestDto, body);
}

function withField(field: string, value: unknown): Record<string, unknown> {
  return { ...base(), [field]: value };
}

const rejection = (body: unknown): GatewayError => rejectionOf(validate, body);
const expectRejected = (body: unknown, param: string): GatewayError =>
  expectRejectedParam(validate, body, param);

describe('ChatCompletionRequestDto via validateDto', () => {
  it('accepts a minimal request and returns a DTO instance with the given values', () => {
    const dto = validate(base());
    expect(dto).toBeInstanceOf(ChatCompletionRequestDto);
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
      expect(validate(withField(field, value))[field as keyof ChatCompletionRequestDto]).toBe(value);
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
      expect(validate(withField(field, value))[field as keyof ChatCompletionRequestDto]).toBe(value);
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
      expect(validate(withField(field, 'u'.repeat(max)))[field as keyof ChatCompletionRequestDto]).toBe(
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

    it('rejects role "tool" naming messages[0].role', () => {
      const error = expectRejected({ messages: [{ role: 'tool', content: 'x' }] }, 'messages[0].role');
      expect(error.message).toContain('expected one of system, user, assistant, developer');
      expect(error.message).toContain('"tool"');
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
