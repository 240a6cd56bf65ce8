import { GatewayError, type ChatDoneMessage } from '@mgw/contracts';
import { INVALID_JSON_PREFIX, type SseWriter } from '@mgw/http';
import { toAnthropicError } from './anthropic-error';
import { MessageJsonRenderer } from './message-json.renderer';
import { MessageStreamRenderer } from './message-stream.renderer';
import { TokenCountRenderer } from './token-count.renderer';

const context = { requestId: 'abc', model: 'sim-chat', createdMs: 0 };
const done = (reason: ChatDoneMessage['finishReasons'][number], stopSequence?: string): ChatDoneMessage => ({
  requestId: 'abc',
  seq: 9,
  kind: 'chat-done',
  finishReasons: [reason],
  usage: { prompt_tokens: 7, completion_tokens: 3 },
  ...(stopSequence !== undefined && { stopSequence }),
});

class FakeSse {
  readonly events: Array<[string, Record<string, unknown>]> = [];
  ended = false;
  event(name: string, json: string): void {
    this.events.push([name, JSON.parse(json) as Record<string, unknown>]);
  }
  done(): void {
    this.ended = true;
  }
  close(): void {
    this.ended = true;
  }
}

describe('MessageStreamRenderer', () => {
  it("writes Anthropic's events: a text block, then a tool_use block, then the stop", () => {
    const sse = new FakeSse();
    const renderer = new MessageStreamRenderer(sse as unknown as SseWriter, context);
    renderer.delta(0, 'Hel');
    renderer.delta(0, 'lo');
    renderer.toolCall({
      requestId: 'abc',
      seq: 3,
      kind: 'tool-call',
      choice: 0,
      index: 0,
      id: 'call_X1',
      name: 'f',
      arguments: '{"a"',
    });
    renderer.toolCall({ requestId: 'abc', seq: 4, kind: 'tool-call', choice: 0, index: 0, arguments: ':1}' });
    renderer.done(done('tool_calls'));
    expect(sse.events.map(([name]) => name)).toEqual([
      'message_start',
      'content_block_start',
      'content_block_delta',
      'content_block_delta',
      'content_block_stop',
      'content_block_start',
      'content_block_delta',
      'content_block_delta',
      'content_block_stop',
      'message_delta',
      'message_stop',
    ]);
    expect(sse.events[0]![1]).toMatchObject({ message: { id: 'msg_abc', model: 'sim-chat', content: [] } });
    expect(sse.events[5]![1]).toEqual({
      type: 'content_block_start',
      index: 1,
      content_block: { type: 'tool_use', id: 'toolu_X1', name: 'f', input: {} },
    });
    expect(sse.events[6]![1]).toMatchObject({
      index: 1,
      delta: { type: 'input_json_delta', partial_json: '{"a"' },
    });
    expect(sse.events[9]![1]).toMatchObject({
      delta: { stop_reason: 'tool_use', stop_sequence: null },
      usage: { output_tokens: 3, input_tokens: 7 },
    });
    expect(sse.ended).toBe(true);
  });

  it('ends a failure with an error event in Anthropic’s shape', () => {
    const sse = new FakeSse();
    new MessageStreamRenderer(sse as unknown as SseWriter, context).error(GatewayError.workerFailed('down'));
    expect(sse.events).toEqual([['error', { type: 'error', error: { type: 'api_error', message: 'down' } }]]);
    expect(sse.ended).toBe(true);
  });
});

describe('MessageJsonRenderer', () => {
  it('collects text and tool uses into one message', () => {
    const renderer = new MessageJsonRenderer(context, () => undefined);
    renderer.delta(0, 'Hi');
    renderer.toolCall({
      requestId: 'abc',
      seq: 2,
      kind: 'tool-call',
      choice: 0,
      index: 0,
      id: 'call_Z',
      name: 'f',
      arguments: '{"x":',
    });
    renderer.toolCall({ requestId: 'abc', seq: 3, kind: 'tool-call', choice: 0, index: 0, arguments: '2}' });
    expect(renderer.done(done('tool_calls'))).toEqual({
      id: 'msg_abc',
      type: 'message',
      role: 'assistant',
      content: [
        { type: 'text', text: 'Hi' },
        { type: 'tool_use', id: 'toolu_Z', name: 'f', input: { x: 2 } },
      ],
      model: 'sim-chat',
      stop_reason: 'tool_use',
      stop_sequence: null,
      usage: {
        input_tokens: 7,
        output_tokens: 3,
        cache_creation_input_tokens: 0,
        cache_read_input_tokens: 0,
      },
    });
  });

  it.each([
    ['stop', undefined, 'end_turn', null],
    ['stop', 'END', 'stop_sequence', 'END'],
    ['length', undefined, 'max_tokens', null],
  ] as const)('maps finish %s (stop sequence %s) to %s', (reason, sequence, stopReason, stopSequence) => {
    const message = new MessageJsonRenderer(context, () => undefined).done(done(reason, sequence));
    expect(message).toMatchObject({ stop_reason: stopReason, stop_sequence: stopSequence, content: [] });
  });

  it('refuses an answer past its bound once', () => {
    const refuse = jest.fn();
    const renderer = new MessageJsonRenderer(context, refuse, 4);
    renderer.delta(0, 'abc');
    renderer.delta(0, 'de');
    renderer.delta(0, 'f');
    expect(refuse).toHaveBeenCalledTimes(1);
    expect(refuse.mock.calls[0][0]).toMatchObject({ status: 502 });
  });
});

describe('toAnthropicError', () => {
  it.each([
    [GatewayError.invalidRequest('bad'), 400, 'invalid_request_error'],
    [GatewayError.modelNotFound('m'), 404, 'not_found_error'],
    [new GatewayError(413, 'invalid_request_error', null, 'big'), 413, 'request_too_large'],
    [GatewayError.rateLimited('requests', 'slow', {}), 429, 'rate_limit_error'],
    [GatewayError.internal('r'), 500, 'api_error'],
    [GatewayError.overloaded('m', 1), 529, 'overloaded_error'],
    [GatewayError.modelUnavailable('m'), 529, 'overloaded_error'],
    [GatewayError.deadlineExceeded(5), 504, 'timeout_error'],
  ])('%s → %i %s', (error, status, type) => {
    expect(toAnthropicError(error)).toEqual({
      status,
      body: { type: 'error', error: { type, message: error.message } },
    });
  });

  it("answers a body that is not JSON in Anthropic's words, with the parser's detail", () => {
    const unparsable = GatewayError.invalidRequest(
      `${INVALID_JSON_PREFIX}Unexpected end of JSON input`,
      null,
      'invalid_json',
    );
    expect(toAnthropicError(unparsable).body.error).toEqual({
      type: 'invalid_request_error',
      message: 'The request body is not valid JSON: Unexpected end of JSON input',
    });
    const tooDeep = GatewayError.invalidRequest(
      'The JSON body nests deeper than 64 levels.',
      null,
      'invalid_json',
    );
    expect(toAnthropicError(tooDeep).body.error.message).toBe(tooDeep.message);
  });

  it("answers key refusals in Anthropic's words, whatever the gateway's reason", () => {
    const refused = (error: GatewayError) => toAnthropicError(error);
    expect(refused(GatewayError.missingApiKey())).toEqual({
      status: 401,
      body: {
        type: 'error',
        error: { type: 'authentication_error', message: 'x-api-key header is required' },
      },
    });
    const invalid = {
      status: 401,
      body: { type: 'error', error: { type: 'authentication_error', message: 'invalid x-api-key' } },
    };
    expect(refused(GatewayError.invalidApiKey())).toEqual(invalid);
    expect(
      refused(new GatewayError(401, 'invalid_request_error', 'invalid_api_key', 'This API key is disabled.')),
    ).toEqual(invalid);
  });
});

describe('TokenCountRenderer', () => {
  const counted: ChatDoneMessage = {
    requestId: 'abc',
    seq: 2,
    kind: 'chat-done',
    finishReasons: [],
    usage: { prompt_tokens: 42, completion_tokens: 0 },
  };

  it("answers the count-only job's prompt tokens", () => {
    const refuse = jest.fn();
    expect(new TokenCountRenderer(refuse).done(counted)).toEqual({ input_tokens: 42 });
    expect(refuse).not.toHaveBeenCalled();
  });

  it('refuses once a worker that generated instead of counting', () => {
    const refuse = jest.fn();
    const renderer = new TokenCountRenderer(refuse);
    renderer.delta();
    renderer.toolCall();
    expect(refuse).toHaveBeenCalledTimes(1);
    expect(refuse.mock.calls[0][0]).toMatchObject({ status: 502 });
    expect(() => renderer.done({ ...counted, finishReasons: ['stop'] })).toThrow(GatewayError);
  });
});
