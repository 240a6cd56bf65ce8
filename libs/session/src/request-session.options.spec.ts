import { GatewayError } from '@mgw/contracts';
import { entry, FakeClient, flush, SessionWorld } from './request-session.fixtures';
import type { Delivery, JsonRenderer, StreamRenderer } from './session-request.types';

const requestId = 'req_options_01';

const quiet: StreamRenderer = {
  delta: () => undefined,
  toolCall: () => undefined,
  image: () => undefined,
  done: () => undefined,
  error: () => undefined,
  moved: () => undefined,
};
const stream: Delivery = { mode: 'stream', format: { protocol: 'test' }, renderer: () => quiet };

describe('RequestSession: resume is opt-in', () => {
  /** Starts a stream of model `m`, lets it run, and has its client leave; returns what happened. */
  async function leave(options: {
    streamResume?: 'on' | 'off';
    header?: 'on' | 'off';
    fallbacks?: string[];
    streamsEnabled?: boolean;
  }): Promise<{ lines: string[]; resumable: boolean }> {
    const lines: string[] = [];
    const world = new SessionWorld((line) => lines.push(line));
    world.config.resumeGraceMs = 30_000;
    world.streamsEnabled = options.streamsEnabled ?? true;
    world.models.set('m', {
      model: entry('m', {
        ...(options.streamResume && { streamResume: options.streamResume }),
        ...(options.fallbacks && { fallbacks: options.fallbacks }),
      }),
    });
    world.models.set('b', { model: entry('b') });
    const client = new FakeClient();
    const session = world.session(
      { requestId, model: 'm', ...(options.header && { resume: options.header }) },
      stream,
      client,
    );
    session.run().catch(() => undefined);
    await flush();
    world.reply(requestId, { kind: 'started', workerId: 'w1' });
    world.reply(requestId, { kind: 'delta', choice: 0, content: 'x' }, 1);
    client.leave();
    const resumable = world.jobs[0]!.resume !== undefined;
    session.shutdown(GatewayError.serviceUnavailable('test over'));
    return { lines, resumable };
  }

  it('cancels a leaving client’s job at once when nothing asked for resume', async () => {
    const { lines, resumable } = await leave({});
    expect(resumable).toBe(false);
    expect(lines).toContain('cancel w1 client_disconnected');
  });

  it('keeps the job for the grace when the client asks (x-stream-resume: on) or the catalog says so', async () => {
    for (const options of [{ header: 'on' as const }, { streamResume: 'on' as const }]) {
      const { lines, resumable } = await leave(options);
      expect(resumable).toBe(true);
      expect(lines).not.toContain('cancel w1 client_disconnected');
      expect(lines).toContain('cancel w1 gateway_shutdown');
    }
  });

  it('lets the client decline the catalog’s default, and never resumes a model with fallbacks or without replay logs', async () => {
    for (const options of [
      { streamResume: 'on' as const, header: 'off' as const },
      { header: 'on' as const, fallbacks: ['b'] },
      { header: 'on' as const, streamsEnabled: false },
      { streamResume: 'off' as const },
    ]) {
      const { lines, resumable } = await leave(options);
      expect(resumable).toBe(false);
      expect(lines).toContain('cancel w1 client_disconnected');
    }
  });
});

describe('RequestSession: a JSON answer past its bound', () => {
  it('is answered with the renderer’s 502 and its job is cancelled at once, without waiting for its end', async () => {
    const lines: string[] = [];
    const world = new SessionWorld((line) => lines.push(line));
    world.models.set('m', { model: entry('m') });
    const tooLarge = GatewayError.workerFailed('too large');
    let deltas = 0;
    const delivery: Delivery = {
      mode: 'json',
      renderer: (_context, refuse): JsonRenderer<unknown> => ({
        delta: () => {
          if (++deltas === 2) refuse(tooLarge);
        },
        toolCall: () => undefined,
        image: () => undefined,
        done: () => ({}),
      }),
    };
    const session = world.session({ requestId, model: 'm' }, delivery);
    const answer = session.run();
    await flush();
    world.reply(requestId, { kind: 'started', workerId: 'w1' });
    world.reply(requestId, { kind: 'delta', choice: 0, content: 'x' }, 1);
    expect(lines).not.toContain('cancel w1 protocol_error');
    world.reply(requestId, { kind: 'delta', choice: 0, content: 'y' }, 2);
    expect(lines).toContain('cancel w1 protocol_error');
    expect(lines).toContain('hold release');
    expect(session.current).toEqual({ name: 'ended', ending: 'answer_too_large' });
    await expect(answer).rejects.toBe(tooLarge);
    // Its route is gone, and what the worker sent before hearing the cancel is not rendered.
    expect(world.handlers.has(requestId)).toBe(false);
    session.onMessage({ requestId, seq: 3, kind: 'delta', choice: 0, content: 'z' });
    expect(deltas).toBe(2);
  });
});

describe('RequestSession: a client gone before its admission', () => {
  it('takes no slot and queues nothing: its session ends at once after the resolution', async () => {
    const lines: string[] = [];
    const world = new SessionWorld((line) => lines.push(line));
    world.models.set('m', { model: entry('m') });
    const client = new FakeClient();
    client.leave();
    const session = world.session({ requestId, model: 'm' }, stream, client);
    await expect(session.run()).rejects.toMatchObject({ code: 'client_closed_request' });
    await flush();
    // No admission, no hold, no job: only the resolution (and the end's unregister, a no-op here).
    expect(lines).toEqual(['lookup m', `unregister ${requestId}`]);
    expect(session.current).toEqual({ name: 'ended', ending: 'client_disconnected' });
    expect(world.endedCalls).toBe(1);
  });
});

describe('RequestSession: a count-only request', () => {
  it('queues a version 3 job flagged countOnly (an older worker refuses it) and renders its chat-done', async () => {
    const world = new SessionWorld(() => undefined);
    world.models.set('m', { model: entry('m') });
    const done: unknown[] = [];
    const delivery: Delivery = {
      mode: 'json',
      renderer: (): JsonRenderer<unknown> => ({
        delta: () => undefined,
        toolCall: () => undefined,
        image: () => undefined,
        done: (message) => done.push(message),
      }),
    };
    const counted = world.session({ requestId, model: 'm', countOnly: true, tokenEstimate: 0 }, delivery);
    const answer = counted.run();
    await flush();
    expect(world.jobs[0]).toMatchObject({ v: 3, countOnly: true, model: 'm' });
    world.reply(requestId, { kind: 'started', workerId: 'w1' });
    const usage = { prompt_tokens: 21, completion_tokens: 0 };
    world.reply(requestId, { kind: 'chat-done', finishReasons: [], usage }, 1);
    await answer;
    expect(done).toEqual([expect.objectContaining({ kind: 'chat-done', usage })]);

    const generated = world.session({ requestId: 'req_options_02', model: 'm' }, delivery);
    generated.run().catch(() => undefined);
    await flush();
    expect(world.jobs[1]).toMatchObject({ v: 1 });
    expect(world.jobs[1]).not.toHaveProperty('countOnly');
    generated.shutdown(GatewayError.serviceUnavailable('test over'));
  });
});
