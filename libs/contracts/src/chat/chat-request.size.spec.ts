import { rejectionOf } from '@mgw/testing';
import type { GatewayError } from '../errors/gateway-error';
import { REQUEST_SIZE_DEFAULTS, type RequestSizeLimits } from '../dto/request-size.limits';
import { WireSchema } from '../validation/wire-schema';
import { CHAT_LIMITS, TOOL_LIMITS, type ChatCompletionRequest } from './chat-request.schema';
import { validateChatRequest } from './chat-request.validator';

const user = (content: unknown): Record<string, unknown> => ({ role: 'user', content });
const body = (fields: Record<string, unknown>): Record<string, unknown> => ({
  model: 'sim-chat',
  messages: [user('Hello')],
  ...fields,
});
const text = (value: string) => ({ type: 'text', text: value });
const tool = (name: string) => ({ type: 'function', function: { name } });
const call = (id: string) => ({ id, type: 'function', function: { name: 'f', arguments: '{}' } });

function validate(plain: unknown, limits: RequestSizeLimits = REQUEST_SIZE_DEFAULTS): ChatCompletionRequest {
  return validateChatRequest(plain, limits);
}

const rejection = (plain: unknown, limits?: RequestSizeLimits): GatewayError =>
  rejectionOf((value) => validate(value, limits), plain);

describe('chat request size bounds, read before the schema reads the body', () => {
  afterEach(() => jest.restoreAllMocks());

  it('refuses 200,000 empty messages by their count, without the schema reading one of them', () => {
    const transform = jest.spyOn(WireSchema.prototype, 'passes');
    const plain = body({ messages: Array.from({ length: 200_000 }, () => ({})) });
    const error = rejection(plain);
    expect(error.param).toBe('messages');
    expect(error.message).toBe(`Invalid 'messages': expected at most 4096 messages, got an array of 200000.`);
    expect(transform).not.toHaveBeenCalled();
  });

  it('checks a body within its bounds by its schema (the pre-check refuses only what is over them)', () => {
    const transform = jest.spyOn(WireSchema.prototype, 'passes');
    expect(validate(body({})).messages).toHaveLength(1);
    expect(transform).toHaveBeenCalledTimes(1);
  });

  it.each([
    [
      'messages',
      body({ messages: Array.from({ length: CHAT_LIMITS.messages.max + 1 }, () => user('x')) }),
      'messages',
      `Invalid 'messages': expected at most 4096 messages, got an array of 4097.`,
    ],
    [
      'tools',
      body({ tools: Array.from({ length: TOOL_LIMITS.tools.max + 1 }, (_, i) => tool(`f${i}`)) }),
      'tools',
      `Invalid 'tools': expected at most 128 tools, got an array of 129.`,
    ],
    [
      'stop',
      body({ stop: ['a', 'b', 'c', 'd', 'e'] }),
      'stop',
      `Invalid 'stop': expected between 1 and 4 stop sequences, got 5.`,
    ],
    [
      'tool_calls',
      body({
        messages: [
          user('Hi'),
          {
            role: 'assistant',
            content: null,
            tool_calls: Array.from({ length: TOOL_LIMITS.toolCalls.max + 1 }, (_, i) => call(`c${i}`)),
          },
        ],
      }),
      'messages[1].tool_calls',
      `Invalid 'messages[1].tool_calls': expected at most 128 tool calls, got an array of 129.`,
    ],
  ])('refuses too many %s with the error body it always had', (_name, plain, param, message) => {
    const transform = jest.spyOn(WireSchema.prototype, 'passes');
    const error = rejection(plain);
    expect(transform).not.toHaveBeenCalled();
    expect(error.toBody()).toEqual({ error: { message, type: 'invalid_request_error', param, code: null } });
  });

  it('accepts as many content parts as the bound and refuses one more, naming the message', () => {
    const parts = (count: number) => Array.from({ length: count }, () => text('x'));
    const max = REQUEST_SIZE_DEFAULTS.contentParts;
    expect(validate(body({ messages: [user('Hi'), user(parts(max))] })).messages[1]!.content).toHaveLength(
      max,
    );
    const error = rejection(body({ messages: [user('Hi'), user(parts(max + 1))] }));
    expect(error.param).toBe('messages[1].content');
    expect(error.message).toBe(
      `Invalid 'messages[1].content': expected at most ${max} content parts, got an array of ${max + 1}.`,
    );
  });

  it('applies the configured content-part bound', () => {
    const limits = { ...REQUEST_SIZE_DEFAULTS, contentParts: 2 };
    expect(() => validate(body({ messages: [user([text('a'), text('b')])] }), limits)).not.toThrow();
    const error = rejection(body({ messages: [user([text('a'), text('b'), text('c')])] }), limits);
    expect(error.param).toBe('messages[0].content');
    expect(error.message).toContain('expected at most 2 content parts, got an array of 3.');
  });

  it('counts text across string contents and text parts (not images, not other fields), against the bound', () => {
    const limits = { ...REQUEST_SIZE_DEFAULTS, textChars: 10 };
    const image = { type: 'image_url', image_url: { url: 'https://example.com/a-long-image-url.png' } };
    const atBound = body({
      messages: [
        { role: 'system', content: 'abc', name: 'a-name-not-counted' },
        user([text('defg'), image, text('hij')]),
      ],
    });
    expect(validate(atBound, limits).messages).toHaveLength(2);
    const over = body({ messages: [user('abc'), user([text('defg'), image, text('hijk')])] });
    const error = rejection(over, limits);
    expect(error.param).toBe('messages');
    expect(error.message).toBe(
      `Invalid 'messages': expected at most 10 characters of text across all messages, got 11.`,
    );
  });

  it('counts image parts across all messages against the configured bound', () => {
    const limits = { ...REQUEST_SIZE_DEFAULTS, imageParts: 2 };
    const image = { type: 'image_url', image_url: { url: 'https://example.com/a.png' } };
    const atBound = body({ messages: [user([image, text('x')]), user([image])] });
    expect(validate(atBound, limits).messages).toHaveLength(2);
    const error = rejection(body({ messages: [user([image, image]), user([image])] }), limits);
    expect(error.param).toBe('messages');
    expect(error.message).toBe(
      `Invalid 'messages': expected at most 2 image parts across all messages, got 3.`,
    );
  });

  it('counts the bytes of image URLs (a data URL as its whole text) against the configured bound', () => {
    const url = `data:image/png;base64,${'A'.repeat(78)}`;
    const image = { type: 'image_url', image_url: { url } };
    const limits = { ...REQUEST_SIZE_DEFAULTS, imageBytes: 2 * url.length };
    expect(validate(body({ messages: [user([image]), user([image])] }), limits).messages).toHaveLength(2);
    const error = rejection(body({ messages: [user([image, image]), user([image])] }), limits);
    expect(error.param).toBe('messages');
    expect(error.message).toBe(
      `Invalid 'messages': expected at most 200 bytes of image URLs across all messages, got 300.`,
    );
  });

  it('leaves shapes it does not bound to the schema, which names them as before', () => {
    expect(rejection(body({ messages: [null, 'x'] })).param).toBe('messages[0]');
    expect(rejection(body({ messages: 'hi' })).param).toBe('messages');
    expect(rejection(body({ messages: [user([null])] })).param).toBe('messages[0].content');
    expect(rejection(body({ stop: 7 })).param).toBe('stop');
  });
});
