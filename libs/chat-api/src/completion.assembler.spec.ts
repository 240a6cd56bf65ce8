import type { ChatDoneMessage, FinishReason, TokenLogprob, ToolCallMessage } from '@mgw/contracts';
import { CompletionAssembler, MAX_ASSEMBLED_CHARS } from './completion.assembler';

const requestId = 'req_ABCdef-123';
const model = 'sim-chat';
const created = 1_700_000_000;

function done(finishReasons: FinishReason[]): ChatDoneMessage {
  return {
    requestId,
    seq: 9,
    kind: 'chat-done',
    finishReasons,
    usage: { prompt_tokens: 30, completion_tokens: 12 },
  };
}

function piece(
  choice: number,
  index: number,
  args: string,
  head?: { id: string; name: string },
): ToolCallMessage {
  return { requestId, seq: 1, kind: 'tool-call', choice, index, arguments: args, ...head };
}

const lp = (token: string): TokenLogprob => ({
  token,
  logprob: -0.5,
  bytes: [...Buffer.from(token)],
  top_logprobs: [{ token, logprob: -0.5, bytes: [...Buffer.from(token)] }],
});

describe('CompletionAssembler: tool calls, logprobs and its bound', () => {
  it('renders a text answer exactly as before: no tool_calls key, logprobs null', () => {
    const assembler = new CompletionAssembler(requestId, model, created);
    assembler.add(0, 'Hi');
    const choice = assembler.finish(done(['stop'])).choices[0];
    expect(JSON.stringify(choice)).toBe(
      '{"index":0,"message":{"role":"assistant","content":"Hi"},"logprobs":null,"finish_reason":"stop"}',
    );
  });

  it('gives content null and the concatenated arguments when the model only called tools', () => {
    const assembler = new CompletionAssembler(requestId, model, created);
    assembler.addToolCall(piece(0, 0, '', { id: 'call_w', name: 'get_weather' }));
    assembler.addToolCall(piece(0, 0, '{"city":'));
    assembler.addToolCall(piece(0, 1, '{}', { id: 'call_t', name: 'get_time' }));
    assembler.addToolCall(piece(0, 0, '"Paris"}'));
    const choice = assembler.finish(done(['tool_calls'])).choices[0];
    expect(choice).toEqual({
      index: 0,
      message: {
        role: 'assistant',
        content: null,
        tool_calls: [
          {
            id: 'call_w',
            type: 'function',
            function: { name: 'get_weather', arguments: '{"city":"Paris"}' },
          },
          { id: 'call_t', type: 'function', function: { name: 'get_time', arguments: '{}' } },
        ],
      },
      logprobs: null,
      finish_reason: 'tool_calls',
    });
    expect(Object.keys(choice!.message)).toEqual(['role', 'content', 'tool_calls']);
  });

  it('keeps text said before a tool call, and keeps choices apart (n=2)', () => {
    const assembler = new CompletionAssembler(requestId, model, created);
    assembler.add(0, 'Let me check.');
    assembler.addToolCall(piece(0, 0, '{}', { id: 'call_a', name: 'f' }));
    assembler.add(1, 'No tools needed.');
    const completion = assembler.finish(done(['tool_calls', 'stop']));
    expect(completion.choices.map((c) => c.message)).toEqual([
      {
        role: 'assistant',
        content: 'Let me check.',
        tool_calls: [{ id: 'call_a', type: 'function', function: { name: 'f', arguments: '{}' } }],
      },
      { role: 'assistant', content: 'No tools needed.' },
    ]);
  });

  it('keeps the arguments of a call whose first piece never came, under an id of its own', () => {
    const assembler = new CompletionAssembler(requestId, model, created);
    assembler.addToolCall(piece(0, 2, '{"x":1}'));
    expect(assembler.finish(done(['tool_calls'])).choices[0]!.message.tool_calls).toEqual([
      { id: `call_${requestId}_0_2`, type: 'function', function: { name: '', arguments: '{"x":1}' } },
    ]);
  });

  it('collects the logprobs of every delta of a choice, in order, with refusal null', () => {
    const assembler = new CompletionAssembler(requestId, model, created);
    assembler.add(0, 'Hel', [lp('Hel')]);
    assembler.add(1, 'A', [lp('A')]);
    assembler.add(0, 'lo', [lp('lo')]);
    const completion = assembler.finish(done(['stop', 'length']));
    expect(completion.choices.map((c) => c.logprobs)).toEqual([
      { content: [lp('Hel'), lp('lo')], refusal: null },
      { content: [lp('A')], refusal: null },
    ]);
  });

  it.each(['stop', 'length', 'tool_calls', 'content_filter'] as const)('keeps finish reason %s', (reason) => {
    const assembler = new CompletionAssembler(requestId, model, created);
    expect(assembler.finish(done([reason])).choices[0]!.finish_reason).toBe(reason);
  });

  it('answers false once text, arguments or logprobs outgrow the bound, and collects nothing more', () => {
    const text = new CompletionAssembler(requestId, model, created, 10);
    expect(text.add(0, '0123456789')).toBe(true);
    expect(text.add(0, 'x')).toBe(false);
    expect(text.finish(done(['stop'])).choices[0]!.message.content).toBe('0123456789');

    const args = new CompletionAssembler(requestId, model, created, 20);
    expect(args.addToolCall(piece(0, 0, '', { id: 'call_1', name: 'f' }))).toBe(true);
    expect(args.addToolCall(piece(0, 0, '{"a":"0123456789"}'))).toBe(false);

    // Each logprob entry costs more than its token: a bound of 100 holds one entry with one alternative.
    const logprobs = new CompletionAssembler(requestId, model, created, 100);
    expect(logprobs.add(0, 'a', [lp('a')])).toBe(true);
    expect(logprobs.add(0, '', [lp('b')])).toBe(false);
  });

  it('bounds an answer at 16 Mi characters by default and explains the failure as a 502', () => {
    expect(MAX_ASSEMBLED_CHARS).toBe(16 * 1024 * 1024);
    const assembler = new CompletionAssembler(requestId, model, created);
    expect(assembler.add(0, 'x'.repeat(MAX_ASSEMBLED_CHARS))).toBe(true);
    expect(assembler.add(0, 'y')).toBe(false);
    const error = assembler.tooLarge();
    expect(error.status).toBe(502);
    expect(error.toBody().error).toMatchObject({ type: 'server_error', code: 'worker_error' });
    expect(error.message).toContain('stream=true');
  });
});
