import { GatewayError } from '@mgw/contracts';
import { chatInferenceRequest } from '@mgw/testing';
import { entry, FallbackWorld, settle } from './request-session.fixtures';

const upstreamFailed = () => GatewayError.workerFailed('The upstream model server failed (HTTP 500).');

/** Waits (bounded) until `events` has `count` entries: timers under test fire late on a busy machine. */
async function eventsOnceThere(world: FallbackWorld, count: number): Promise<string[]> {
  const deadline = Date.now() + 5000;
  while (world.events.length < count && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  await settle();
  return world.events;
}

describe('RequestSession: fallbacks after a job fails before any output', () => {
  let world: FallbackWorld;

  beforeEach(() => {
    world = new FallbackWorld();
  });

  afterEach(() => world.dispose());

  it('serves a request whose job fails before any output by the next model, under the same request id', async () => {
    await world.attempts({ fallbacks: ['b'] });
    world.reply({ kind: 'started', workerId: 'w0' } as never);
    world.fail(upstreamFailed());
    await settle();
    expect(world.model).toBe('b');
    world.serve('from b');
    expect(world.events).toEqual([
      'enqueue a',
      'fallback a→b failed',
      'enqueue b',
      'switched b',
      'output b',
      'delta b from b',
      'done b',
    ]);
    const [first, second] = world.jobs;
    expect(first!.hasFallback).toBe(true);
    // The same request and deadline; its own model and enqueue time; no fallback left after it.
    expect(second).toEqual({ ...first, model: 'b', enqueuedAt: expect.any(Number), hasFallback: undefined });
    expect(second).not.toHaveProperty('hasFallback');
  });

  it('ends with its last attempt: the end waits through a switch for the fallback’s job', async () => {
    await world.attempts({ fallbacks: ['b'] });
    world.fail(upstreamFailed());
    await settle();
    await settle();
    expect([world.model, world.ended]).toEqual(['b', false]);
    world.serve('from b');
    await settle();
    expect(world.ended).toBe(true);
  });

  it('never falls back once output was sent: the error is the answer', async () => {
    await world.attempts({ fallbacks: ['b'] });
    world.reply({ kind: 'delta', choice: 0, content: 'half' } as never);
    world.fail(upstreamFailed());
    await settle();
    expect(world.events).toEqual(['enqueue a', 'output a', 'delta a half', 'failed 502 worker_error']);
  });

  it('does not fall back from what the client must fix, nor from its deadline', async () => {
    for (const error of [
      GatewayError.invalidRequest('temperature is not supported', 'temperature'),
      GatewayError.contextLengthExceeded(64, 100, false),
      GatewayError.deadlineExceeded(1000),
    ]) {
      const local = new FallbackWorld();
      await local.attempts({ fallbacks: ['b'] });
      local.fail(error);
      await settle();
      expect(local.events).toEqual(['enqueue a', `failed ${error.status} ${error.code}`]);
    }
  });

  it('skips fallbacks that cannot take the request, in order, and counts each hop with its reason', async () => {
    world.models.set('b', { error: GatewayError.modelUnavailable('b'), declared: entry('b') });
    world.overloaded.add('c');
    await world.attempts({ fallbacks: ['b', 'c', 'd'] });
    world.fail(upstreamFailed());
    await settle();
    world.serve('from d');
    expect(world.events).toEqual([
      'enqueue a',
      'fallback a→b failed',
      'fallback b→c unavailable',
      'fallback c→d overloaded',
      'enqueue d',
      'switched d',
      'output d',
      'delta d from d',
      'done d',
    ]);
  });

  it('skips a fallback the request does not fit (checkModel), without asking the client to fix it', async () => {
    await world.attempts({
      fallbacks: ['b', 'c'],
      checkModel: (model) => {
        if (model.id === 'b') throw GatewayError.contextLengthExceeded(64, 100, true);
      },
    });
    world.fail(upstreamFailed());
    await settle();
    expect(world.events.slice(-3)).toEqual(['fallback b→c unavailable', 'enqueue c', 'switched c']);
  });

  describe("a model's URL policy (urlInputs)", () => {
    const withImage = (url: string) =>
      chatInferenceRequest({
        messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url } }] }],
      });

    it('refuses a URL the requested model does not take before anything is queued, and tries no fallback', async () => {
      await world.attempts({ fallbacks: ['b'], request: withImage('http://169.254.169.254/latest/') });
      await settle();
      expect(world.events).toEqual(['failed 400 invalid_image_url']);
      expect(world.failures[0]!.param).toBe('messages[0].content[0].image_url.url');
    });

    it('skips a fallback whose policy refuses the URL, as a model the request does not fit', async () => {
      world.models.set('b', { model: entry('b', { urlInputs: 'none' }) });
      world.models.set('c', { model: entry('c', { urlInputs: 'any' }) });
      await world.attempts({
        fallbacks: ['b', 'c'],
        urlInputs: 'any',
        request: withImage('http://10.0.0.7/cat.png'),
      });
      world.fail(upstreamFailed());
      await settle();
      expect(world.events).toEqual([
        'enqueue a',
        'fallback a→b failed',
        'fallback b→c unavailable',
        'enqueue c',
        'switched c',
      ]);
    });
  });

  it('answers with the requested model’s own error when no fallback can serve', async () => {
    world.models.set('b', { error: GatewayError.modelUnavailable('b'), declared: entry('b') });
    await world.attempts({ fallbacks: ['b'] });
    world.fail(new GatewayError(502, 'server_error', 'upstream_error', 'The upstream model server failed.'));
    await settle();
    expect(world.events).toEqual(['enqueue a', 'fallback a→b failed', 'failed 502 upstream_error']);
  });

  it('answers with the requested model’s refusal when the fallback admitted in its place fails too', async () => {
    // z, the model asked for, has no live worker: a takes its place at admission, then c after a failed.
    world.models.set('z', {
      error: GatewayError.modelUnavailable('z'),
      declared: entry('z', { fallbacks: ['a', 'c'] }),
    });
    world.models.set('a', { model: entry('a') });
    world.models.set('c', { model: entry('c') });
    await world.attempts({ requested: 'z' });
    world.fail(upstreamFailed());
    await settle();
    world.fail(new GatewayError(504, 'timeout_error', 'upstream_timeout', 'The upstream timed out.'));
    await settle();
    expect(world.events).toEqual([
      'fallback z→a unavailable',
      'enqueue a',
      'fallback a→c failed',
      'enqueue c',
      'switched c',
      'failed 503 model_unavailable',
    ]);
    expect(world.events.at(-1)).toBe('failed 503 model_unavailable');
    expect(world.failures.at(-1)!.message).toContain('`z`');
  });

  it('falls back when a scale-to-zero model gets no worker in time', async () => {
    await world.attempts({ fallbacks: ['b'], startWithinMs: 5 });
    expect(await eventsOnceThere(world, 5)).toEqual([
      'enqueue a',
      'remove a',
      'fallback a→b unavailable',
      'enqueue b',
      'switched b',
    ]);
  });

  it('counts as open while it switches, so a drain waits for it', async () => {
    let resolve!: () => void;
    await world.attempts({ fallbacks: ['b'] });
    world.resolving = new Promise<void>((r) => (resolve = r));
    world.fail(upstreamFailed());
    expect([world.session.current.name, world.ended]).toEqual(['resolving', false]);
    resolve();
    await settle();
    expect([world.session.current.name, world.ended, world.model]).toEqual(['queued', false, 'b']);
  });

  it('stops a switch under way when the client leaves: no further job', async () => {
    let resolve!: () => void;
    await world.attempts({ fallbacks: ['b'] });
    world.resolving = new Promise<void>((r) => (resolve = r));
    world.fail(upstreamFailed());
    world.abandon();
    resolve();
    await settle();
    expect(world.events).toEqual(['enqueue a', 'fallback a→b failed']);
  });

  it('takes the current job back when the client leaves', async () => {
    await world.attempts({ fallbacks: ['b'] });
    world.fail(upstreamFailed());
    await settle();
    world.abandon();
    await settle();
    expect(world.events.slice(-2)).toEqual(['switched b', 'remove b']);
  });

  it('never starts a fallback past the request’s deadline', async () => {
    await world.attempts({ fallbacks: ['b'] });
    world.jobs[0]!.deadline = Date.now() - 1;
    // The job template is the same object: the deadline is the request's, whatever attempt runs.
    world.fail(upstreamFailed());
    await settle();
    expect(world.events).toEqual(['enqueue a', 'failed 504 deadline_exceeded']);
  });
});
