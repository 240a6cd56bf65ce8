import type { Job } from 'bullmq';
import type { ChatCompletionRequestDto, ChatJobData } from '@mgw/contracts';
import type { ChatBackend, ChatInferenceEvent } from '@mgw/inference';
import type { OutgoingReply, ReplyStreamWriter } from '@mgw/queue';
import { ChatJobProcessor, MAX_COALESCED_CHARS } from './chat-job.processor';
import type { JobContext, JobRunner } from './job-runner';

/** A backend that yields a fixed list of events. */
function backendOf(events: ChatInferenceEvent[]): ChatBackend {
  return {
    // eslint-disable-next-line @typescript-eslint/require-await
    async *generate() {
      yield* events;
    },
    close: () => Promise.resolve(),
  };
}

/** Runs the processor with a runner that hands it a writer collecting every message it sends. */
async function sent(request: Partial<ChatCompletionRequestDto>, events: ChatInferenceEvent[]) {
  const messages: OutgoingReply[] = [];
  const writer = {
    send: (message: OutgoingReply) => {
      messages.push(message);
      return Promise.resolve();
    },
  } as unknown as ReplyStreamWriter;
  const data = { request: { model: 'm', messages: [{ role: 'user', content: 'hi' }], ...request } };
  const runner = {
    run: async (
      _job: Job,
      _cls: unknown,
      _model: string,
      execute: (c: JobContext<ChatJobData>) => Promise<void>,
    ) => {
      await execute({ data: data as unknown as ChatJobData, signal: new AbortController().signal, writer });
      return 'completed';
    },
  } as unknown as JobRunner;
  await new ChatJobProcessor('m', backendOf(events), runner).process({} as Job);
  return messages;
}

const usage: ChatInferenceEvent = { type: 'usage', promptTokens: 3, completionTokens: 4 };
const delta = (choice: number, text: string): ChatInferenceEvent => ({ type: 'delta', choice, text });
const finish = (choice: number): ChatInferenceEvent => ({ type: 'finish', choice, reason: 'stop' });
const done = {
  kind: 'chat-done',
  finishReasons: ['stop'],
  usage: { prompt_tokens: 3, completion_tokens: 4 },
};

describe('ChatJobProcessor', () => {
  it('sends a stream one delta per token, in order', async () => {
    const messages = await sent({ stream: true }, [
      delta(0, 'a'),
      delta(0, ''),
      delta(0, 'b'),
      finish(0),
      usage,
    ]);
    expect(messages).toEqual([
      { kind: 'delta', choice: 0, content: 'a' },
      { kind: 'delta', choice: 0, content: 'b' },
      done,
    ]);
  });

  it('joins a non-streaming answer into one delta per choice, sent when the choice finishes', async () => {
    const events = [
      delta(0, 'He'),
      delta(1, 'Wo'),
      delta(0, 'llo'),
      finish(0),
      delta(1, 'rld'),
      finish(1),
      usage,
    ];
    const messages = await sent({ n: 2 }, events);
    expect(messages).toEqual([
      { kind: 'delta', choice: 0, content: 'Hello' },
      { kind: 'delta', choice: 1, content: 'World' },
      { ...done, finishReasons: ['stop', 'stop'] },
    ]);
  });

  it('never lets a coalesced message grow past the bound', async () => {
    const token = 'x'.repeat(1000);
    const count = Math.ceil((3 * MAX_COALESCED_CHARS) / token.length);
    const messages = await sent({}, [
      ...Array.from({ length: count }, () => delta(0, token)),
      finish(0),
      usage,
    ]);
    const deltas = messages.filter((m): m is Extract<OutgoingReply, { kind: 'delta' }> => m.kind === 'delta');
    expect(deltas.length).toBeGreaterThanOrEqual(3);
    for (const m of deltas) expect(m.content.length).toBeLessThan(MAX_COALESCED_CHARS + token.length);
    expect(deltas.map((m) => m.content).join('')).toBe(token.repeat(count));
  });
});
