import { GatewayError } from '@mgw/contracts';
import type { ChatInferenceEvent } from '../chat-backend.interface';
import { countPromptTokens } from '../text/token-count';
import { ChatStreamReader } from './chat-stream.reader';

const messages = [{ role: 'user' as const, content: 'Hi there' }];
const data = (choices: unknown[], extra: Record<string, unknown> = {}) =>
  JSON.stringify({ object: 'chat.completion.chunk', choices, ...extra });
const content = (index: number, text: string, finish: string | null = null) => ({
  index,
  delta: { content: text },
  finish_reason: finish,
});

function read(n: number, events: string[]): ChatInferenceEvent[] {
  const reader = new ChatStreamReader({ n, messages });
  return [...events.flatMap((event) => reader.readEvent(event)), ...reader.end()];
}

function errorOf(run: () => unknown): GatewayError {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(GatewayError);
    return error as GatewayError;
  }
  throw new Error('expected a GatewayError');
}

describe('ChatStreamReader', () => {
  it('makes one delta per upstream content chunk, skips role-only chunks, and uses the upstream usage', () => {
    expect(
      read(1, [
        data([{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }]),
        data([content(0, 'Hel')]),
        data([content(0, 'lo')]),
        data([{ index: 0, delta: {}, finish_reason: 'stop' }]),
        data([], { usage: { prompt_tokens: 9, completion_tokens: 2, total_tokens: 11 } }),
        '[DONE]',
      ]),
    ).toEqual([
      { type: 'delta', choice: 0, text: 'Hel' },
      { type: 'delta', choice: 0, text: 'lo' },
      { type: 'finish', choice: 0, reason: 'stop' },
      { type: 'usage', promptTokens: 9, completionTokens: 2 },
    ]);
  });

  it('keeps choices apart, maps finish reasons, and counts usage the upstream did not send', () => {
    const events = read(2, [
      data([content(1, 'Blue sea')]),
      data([content(0, 'Red sky', 'length')]),
      data([{ index: 1, delta: {}, finish_reason: 'content_filter' }], { usage: null }),
      '[DONE]',
    ]);
    expect(events.slice(0, 4)).toEqual([
      { type: 'delta', choice: 1, text: 'Blue sea' },
      { type: 'delta', choice: 0, text: 'Red sky' },
      { type: 'finish', choice: 0, reason: 'length' },
      { type: 'finish', choice: 1, reason: 'stop' },
    ]);
    expect(events[4]).toEqual({
      type: 'usage',
      promptTokens: countPromptTokens({ messages }),
      completionTokens: 4,
    });
  });

  it('finishes with stop a choice the upstream left open before [DONE]', () => {
    expect(read(1, [data([content(0, 'ok')]), '[DONE]']).slice(1)).toEqual([
      { type: 'finish', choice: 0, reason: 'stop' },
      { type: 'usage', promptTokens: countPromptTokens({ messages }), completionTokens: 1 },
    ]);
  });

  it('accepts a stream without [DONE] once every choice finished, but not one cut short', () => {
    expect(read(1, [data([content(0, 'ok', 'stop')])]).at(-1)).toMatchObject({ type: 'usage' });
    const error = errorOf(() => read(1, [data([content(0, 'partial')])]));
    expect(error).toMatchObject({ status: 502, code: 'upstream_protocol_error' });
    expect(error.message).toBe('The upstream model server ended the stream before it was complete.');
  });

  it('says so when the upstream returned fewer choices than asked for', () => {
    expect(errorOf(() => read(3, [data([content(0, 'only one', 'stop')]), '[DONE]'])).message).toBe(
      'The upstream model server returned 1 of 3 choices (it may not support n).',
    );
  });

  it('refuses choice indexes outside n and malformed events', () => {
    expect(errorOf(() => read(1, [data([content(1, 'x')])])).message).toContain(
      'sent choice 1 for a request of 1',
    );
    expect(errorOf(() => read(1, ['{not json'])).code).toBe('upstream_protocol_error');
    expect(errorOf(() => read(1, ['[1,2]'])).code).toBe('upstream_protocol_error');
    expect(errorOf(() => read(1, [data('x' as unknown as unknown[])])).code).toBe('upstream_protocol_error');
  });

  it('turns an error event into a 502 carrying the upstream message', () => {
    const error = errorOf(() =>
      read(1, [data([content(0, 'a')]), JSON.stringify({ error: { message: 'OOM' } })]),
    );
    expect(error).toMatchObject({ status: 502, code: 'upstream_error' });
    expect(error.message).toBe('The upstream model server failed during generation: OOM');
  });

  it('ignores what comes after [DONE]', () => {
    const reader = new ChatStreamReader({ n: 1, messages });
    reader.readEvent(data([content(0, 'a', 'stop')]));
    reader.readEvent('[DONE]');
    expect(reader.ended).toBe(true);
    expect(reader.readEvent(data([content(0, 'late')]))).toEqual([]);
  });

  it('reads a whole completion from an upstream that ignored stream: true', () => {
    const reader = new ChatStreamReader({ n: 1, messages });
    const body = JSON.stringify({
      object: 'chat.completion',
      choices: [{ index: 0, message: { role: 'assistant', content: 'All at once' }, finish_reason: 'stop' }],
      usage: { prompt_tokens: 4, completion_tokens: 3, total_tokens: 7 },
    });
    expect([...reader.readCompletion(body), ...reader.end()]).toEqual([
      { type: 'delta', choice: 0, text: 'All at once' },
      { type: 'finish', choice: 0, reason: 'stop' },
      { type: 'usage', promptTokens: 4, completionTokens: 3 },
    ]);
  });
});
