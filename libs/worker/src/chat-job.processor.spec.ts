import type { Job } from 'bullmq';
import { GatewayError, type TokenLogprob } from '@mgw/contracts';
import { type ChatJob } from '@mgw/request';
import type { ChatBackend, ChatInferenceEvent, ChatInferenceRequest } from '@mgw/inference';
import { JobStopped, type JobStop, type OutgoingReply } from '@mgw/queue';
import { ChatJobProcessor } from './chat-job.processor';
import type { JobContext, JobRunner } from './job-runner';
import type { UsageReporter } from './usage.reporter';
import { chatInferenceRequest } from '@mgw/testing';

/** The job's neutral request; only `n` and `logprobs` matter to the forwarding under test. */
let inference: ChatInferenceRequest;

function requestWith(fields: Partial<ChatInferenceRequest>): ChatInferenceRequest {
  return chatInferenceRequest({
    messages: [{ role: 'user', content: 'What is the weather in Paris?' }],
    ...fields,
  });
}

const data = {
  requestId: 'req_0123456789',
  model: 'sim-chat',
  replyTo: 'mgw:replies:gw-1',
  deadline: Date.now() + 60_000,
} as unknown as ChatJob;

const lp = (token: string): TokenLogprob => ({
  token,
  logprob: -0.5,
  bytes: [...Buffer.from(token)],
  top_logprobs: [],
});

/** What the fake backend answers a count with, and what it was asked to count and to generate. */
const PROMPT_COUNT = 37;
let counted: ChatInferenceRequest[] = [];
let generated = 0;

interface Run {
  sent: OutgoingReply[];
  reported: Array<{ promptTokens: number; completionTokens: number }>;
  outcome: Promise<unknown>;
}

/** Runs one job through the processor with a runner that hands it a recording writer. */
function run(
  events: ChatInferenceEvent[],
  failAfter?: Error,
  jobData: ChatJob = data,
  signal: AbortSignal = new AbortController().signal,
): Run {
  const sent: OutgoingReply[] = [];
  const reported: Run['reported'] = [];
  const backend: ChatBackend = {
    async *generate() {
      generated++;
      for (const event of events) yield await Promise.resolve(event);
      if (failAfter) throw failAfter;
    },
    countPromptTokens: (request) => {
      counted.push(request);
      return Promise.resolve(PROMPT_COUNT);
    },
    close: () => Promise.resolve(),
  };
  const runner = {
    run: async (
      _job: unknown,
      _cls: unknown,
      _model: string,
      execute: (c: JobContext<ChatJob>) => Promise<void>,
    ) => {
      const writer = { send: (message: OutgoingReply) => Promise.resolve(void sent.push(message)) };
      await execute({
        data: { ...jobData, request: inference },
        signal,
        writer,
      } as unknown as JobContext<ChatJob>);
      return 'completed';
    },
  } as unknown as JobRunner;
  const usage = {
    report: (_subject: unknown, amounts: Run['reported'][number]) =>
      Promise.resolve(void reported.push(amounts)),
  } as unknown as UsageReporter;
  const processor = new ChatJobProcessor(runner, usage, { chat: () => backend });
  return { sent, reported, outcome: processor.process({} as Job<unknown>, 'sim-chat') };
}

describe('ChatJobProcessor event forwarding', () => {
  beforeEach(() => {
    inference = requestWith({});
    counted = [];
    generated = 0;
  });

  it("answers a count-only job with the backend's prompt count alone: no generation, no usage recorded", async () => {
    const { sent, reported, outcome } = run([{ type: 'delta', choice: 0, text: 'never' }], undefined, {
      ...data,
      countOnly: true,
    });
    await outcome;
    expect(counted).toEqual([inference]);
    expect(generated).toBe(0);
    expect(sent).toEqual([
      { kind: 'chat-done', finishReasons: [], usage: { prompt_tokens: PROMPT_COUNT, completion_tokens: 0 } },
    ]);
    expect(reported).toEqual([]);
  });

  it('generates, and counts nothing apart, for a job that is not count-only', async () => {
    const { sent, outcome } = run([
      { type: 'finish', choice: 0, reason: 'stop' },
      { type: 'usage', promptTokens: 5, completionTokens: 0 },
    ]);
    await outcome;
    expect(generated).toBe(1);
    expect(counted).toEqual([]);
    expect(sent).toEqual([
      { kind: 'chat-done', finishReasons: ['stop'], usage: { prompt_tokens: 5, completion_tokens: 0 } },
    ]);
  });

  it('forwards a tool call as tool-call messages, the first with id and name, and its finish reason', async () => {
    const { sent, outcome } = run([
      { type: 'tool-call-start', choice: 0, index: 0, id: 'call_a1', name: 'get_weather' },
      { type: 'tool-call-arguments', choice: 0, index: 0, fragment: '{"city":' },
      { type: 'tool-call-arguments', choice: 0, index: 0, fragment: '' },
      { type: 'tool-call-arguments', choice: 0, index: 0, fragment: '"Paris"}' },
      { type: 'tool-call-start', choice: 0, index: 1, id: 'call_b2', name: 'get_time' },
      { type: 'tool-call-arguments', choice: 0, index: 1, fragment: '{}' },
      { type: 'finish', choice: 0, reason: 'tool_calls' },
      { type: 'usage', promptTokens: 12, completionTokens: 9 },
    ]);
    await outcome;
    expect(sent).toEqual([
      { kind: 'tool-call', choice: 0, index: 0, id: 'call_a1', name: 'get_weather', arguments: '' },
      { kind: 'tool-call', choice: 0, index: 0, arguments: '{"city":' },
      { kind: 'tool-call', choice: 0, index: 0, arguments: '"Paris"}' },
      { kind: 'tool-call', choice: 0, index: 1, id: 'call_b2', name: 'get_time', arguments: '' },
      { kind: 'tool-call', choice: 0, index: 1, arguments: '{}' },
      {
        kind: 'chat-done',
        finishReasons: ['tool_calls'],
        usage: { prompt_tokens: 12, completion_tokens: 9 },
      },
    ]);
  });

  it('keeps every finish reason per choice', async () => {
    inference = requestWith({ n: 4 });
    const { sent, outcome } = run([
      { type: 'finish', choice: 2, reason: 'content_filter' },
      { type: 'finish', choice: 0, reason: 'stop' },
      { type: 'finish', choice: 3, reason: 'tool_calls' },
      { type: 'finish', choice: 1, reason: 'length' },
      { type: 'usage', promptTokens: 1, completionTokens: 0 },
    ]);
    await outcome;
    expect(sent).toEqual([
      {
        kind: 'chat-done',
        finishReasons: ['stop', 'length', 'content_filter', 'tool_calls'],
        usage: { prompt_tokens: 1, completion_tokens: 0 },
      },
    ]);
  });

  it('sends logprobs with a delta only when the request asked for them', async () => {
    const events: ChatInferenceEvent[] = [
      { type: 'delta', choice: 0, text: 'Hi', logprobs: [lp('Hi')] },
      { type: 'finish', choice: 0, reason: 'stop' },
      { type: 'usage', promptTokens: 1, completionTokens: 1 },
    ];
    const plain = run(events);
    await plain.outcome;
    expect(plain.sent[0]).toEqual({ kind: 'delta', choice: 0, content: 'Hi' });

    inference = requestWith({ logprobs: true });
    const asked = run(events);
    await asked.outcome;
    expect(asked.sent[0]).toEqual({ kind: 'delta', choice: 0, content: 'Hi', logprobs: [lp('Hi')] });
  });

  it('sends a delta whose text is still empty when it carries logprobs (a token of a split character)', async () => {
    inference = requestWith({ logprobs: true });
    const { sent, outcome } = run([
      { type: 'delta', choice: 0, text: '', logprobs: [lp('\u00e2')] },
      { type: 'delta', choice: 0, text: '', logprobs: [] },
      { type: 'delta', choice: 0, text: '' },
      { type: 'finish', choice: 0, reason: 'stop' },
      { type: 'usage', promptTokens: 1, completionTokens: 1 },
    ]);
    await outcome;
    expect(sent.map((m) => m.kind)).toEqual(['delta', 'chat-done']);
  });

  it.each([
    ['a name outside OpenAI function names', 'call_1', 'functions.get weather', "'name' must match"],
    ['an empty id', '', 'get_weather', "'id' must be 1 to 256 characters"],
  ])(
    'fails the job with a clear 502 when a backend calls a tool with %s',
    async (_label, id, name, reason) => {
      const { sent, outcome } = run([
        { type: 'delta', choice: 0, text: 'Calling.' },
        { type: 'tool-call-start', choice: 0, index: 0, id, name },
        { type: 'tool-call-arguments', choice: 0, index: 0, fragment: '{}' },
      ]);
      const error = await outcome.then(
        () => null,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(GatewayError);
      expect(error).toMatchObject({ status: 502, code: 'worker_error' });
      expect((error as GatewayError).message).toContain(reason);
      expect(sent).toEqual([{ kind: 'delta', choice: 0, content: 'Calling.' }]);
    },
  );

  it('counts what was sent when the backend fails before reporting usage', async () => {
    inference = requestWith({ logprobs: true });
    const failure = new Error('backend died');
    const { reported, outcome } = run(
      [
        { type: 'delta', choice: 0, text: 'Let me', logprobs: [lp('Let'), lp(' me')] },
        { type: 'delta', choice: 0, text: ' check.' },
        { type: 'tool-call-start', choice: 0, index: 0, id: 'call_a1', name: 'get_weather' },
        { type: 'tool-call-arguments', choice: 0, index: 0, fragment: '{"city":' },
        { type: 'tool-call-arguments', choice: 0, index: 0, fragment: '"Paris"}' },
      ],
      failure,
    );
    await expect(outcome).rejects.toBe(failure);
    expect(reported).toHaveLength(1);
    // 2 tokens with logprobs + 1 delta + 1 tool name + 2 argument fragments
    expect(reported[0]!.completionTokens).toBe(6);
    expect(reported[0]!.promptTokens).toBeGreaterThan(0);
  });

  describe('a job whose gateway has a fallback model for it (hasFallback)', () => {
    const withFallback = { ...data, hasFallback: true } as ChatJob;

    it('records no usage when it fails before any output: the model that serves records the request', async () => {
      const failure = GatewayError.workerFailed('upstream 500');
      const { sent, reported, outcome } = run(
        [{ type: 'delta', choice: 0, text: '' }],
        failure,
        withFallback,
      );
      await expect(outcome).rejects.toBe(failure);
      expect([sent, reported]).toEqual([[], []]);
    });

    it('still records what it sent when it fails after output (no fallback can hide that)', async () => {
      const failure = new Error('backend died');
      const { reported, outcome } = run([{ type: 'delta', choice: 0, text: 'Hel' }], failure, withFallback);
      await expect(outcome).rejects.toBe(failure);
      expect(reported).toEqual([{ promptTokens: expect.any(Number), completionTokens: 1, images: 0 }]);
    });

    it('records a failure before output as before when there is no fallback', async () => {
      const failure = new Error('backend died');
      const { reported, outcome } = run([], failure);
      await expect(outcome).rejects.toBe(failure);
      expect(reported).toEqual([{ promptTokens: expect.any(Number), completionTokens: 0, images: 0 }]);
    });
  });

  describe("a batch's line (batchLine)", () => {
    const line = { ...data, batchLine: `batch_${'a'.repeat(24)}:${'b'.repeat(32)}` } as ChatJob;
    const stoppedBy = (stop: JobStop): AbortSignal => {
      const controller = new AbortController();
      controller.abort(new JobStopped(stop));
      return controller.signal;
    };

    it.each<[string, JobStop]>([
      ['its gateway gone', { kind: 'nobody_listening' }],
      ['its worker stopping', { kind: 'worker_stopping', error: GatewayError.internal('r') }],
      ['its gateway losing the queue', { kind: 'cancelled', reason: 'connection_lost' }],
      ['its deadline', { kind: 'cancelled', reason: 'deadline_exceeded' }],
    ])('records nothing when stopped part-way by %s: only a finished run counts', async (_why, stop) => {
      const signal = stoppedBy(stop);
      const { reported, outcome } = run(
        [{ type: 'delta', choice: 0, text: 'Hel' }],
        signal.reason as Error,
        line,
        signal,
      );
      await expect(outcome).rejects.toBe(signal.reason);
      expect(reported).toEqual([]);
    });

    it('records nothing when its run fails part-way (its replies could not be sent, say)', async () => {
      const failure = new Error('Connection is closed.');
      const { reported, outcome } = run([{ type: 'delta', choice: 0, text: 'Hel' }], failure, line);
      await expect(outcome).rejects.toBe(failure);
      expect(reported).toEqual([]);
    });

    it('records the usage of a run that finished', async () => {
      const { reported, outcome } = run(
        [
          { type: 'delta', choice: 0, text: 'Hello' },
          { type: 'finish', choice: 0, reason: 'stop' },
          { type: 'usage', promptTokens: 7, completionTokens: 1 },
        ],
        undefined,
        line,
      );
      await outcome;
      expect(reported).toEqual([{ promptTokens: 7, completionTokens: 1, images: 0 }]);
    });
  });
});
