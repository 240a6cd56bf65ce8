import { GatewayError, type ChatCompletion, type ChatDoneMessage } from '@mgw/contracts';
import { CompletionAssembler } from './completion.assembler';
import type { StreamRenderer } from '@mgw/session';
import { capturingCompletion } from './completion-capture';

const done: ChatDoneMessage = {
  requestId: 'req_abcdefgh',
  seq: 5,
  kind: 'chat-done',
  finishReasons: ['stop'],
  usage: { prompt_tokens: 4, completion_tokens: 2 },
};

function recordingSink(events: string[]): StreamRenderer {
  return {
    delta: (choice, content) => void events.push(`delta ${choice} ${content}`),
    toolCall: (piece) => void events.push(`tool ${piece.arguments}`),
    image: () => undefined,
    done: () => void events.push('done'),
    error: (error) => void events.push(`error ${error.message}`),
    moved: () => undefined,
  };
}

describe('capturingCompletion', () => {
  it('passes every reply on at once and keeps the assembled completion before the stream’s end goes out', async () => {
    const events: string[] = [];
    let kept: ChatCompletion | null | undefined;
    let finishKeeping!: () => void;
    const sink = capturingCompletion(
      recordingSink(events),
      new CompletionAssembler('req_abcdefgh', 'sim-chat', 1_700_000_000),
      (completion) => {
        kept = completion;
        events.push('kept');
        return new Promise<void>((resolve) => (finishKeeping = resolve));
      },
    );
    sink.delta(0, 'Hel');
    sink.delta(0, 'lo');
    expect(events).toEqual(['delta 0 Hel', 'delta 0 lo']);
    sink.done(done);
    expect(events).toEqual(['delta 0 Hel', 'delta 0 lo', 'kept']);
    expect(kept).toMatchObject({
      id: 'chatcmpl-req_abcdefgh',
      model: 'sim-chat',
      choices: [{ index: 0, message: { role: 'assistant', content: 'Hello' }, finish_reason: 'stop' }],
      usage: { prompt_tokens: 4, completion_tokens: 2, total_tokens: 6 },
    });
    finishKeeping();
    await new Promise((resolve) => setImmediate(resolve));
    expect(events.at(-1)).toBe('done');
  });

  it('keeps nothing of an answer past the assembler’s bound, which still streams to the end', async () => {
    const events: string[] = [];
    const keep = jest.fn((_completion: ChatCompletion | null) => Promise.resolve());
    const sink = capturingCompletion(
      recordingSink(events),
      new CompletionAssembler('req_abcdefgh', 'm', 1, 4),
      keep,
    );
    sink.delta(0, 'abc');
    sink.delta(0, 'defgh');
    sink.done(done);
    await new Promise((resolve) => setImmediate(resolve));
    expect(keep).toHaveBeenCalledWith(null);
    expect(events).toEqual(['delta 0 abc', 'delta 0 defgh', 'done']);
  });

  it('keeps nothing of a stream that fails', () => {
    const events: string[] = [];
    const keep = jest.fn(() => Promise.resolve());
    const sink = capturingCompletion(
      recordingSink(events),
      new CompletionAssembler('req_abcdefgh', 'm', 1),
      keep,
    );
    sink.delta(0, 'a');
    sink.error(GatewayError.workerFailed('boom'));
    expect(keep).not.toHaveBeenCalled();
    expect(events).toEqual(['delta 0 a', 'error boom']);
  });
});
