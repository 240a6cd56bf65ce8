import { Redis } from 'ioredis';
import { PrivateRedis } from '../support/private-redis';
import { readSse } from '../support/sse';
import { Stack } from '../support/stack';
import { waitFor } from '../support/wait-for';

const MODEL = 'sim-firehose';
const STREAMS = 16;
const CHOICES = 4;
/** Redis drops a pub/sub client with this much unsent output (the default is 32 MB, or 8 MB for 60 s). */
const PUBSUB_LIMIT_BYTES = 2 * 1024 * 1024;
const STALL_MS = 4000;

interface Outcome {
  finished: boolean;
  error: string | null;
  done: boolean;
  chars: number;
}

/**
 * A gateway that stalls while workers stream unpaced: Redis buffers the gateway's replies, and past the
 * pub/sub output buffer limit it drops the gateway's one subscriber — every open request of that gateway
 * with it. The workers' flow control holds the streams back instead; without it, the drop is contained:
 * every open stream ends with the error contract, none looks finished.
 */
describe('faults: a stalled gateway and unpaced streams (reply backlog)', () => {
  let redis: PrivateRedis;

  beforeAll(async () => {
    redis = await PrivateRedis.start();
    const admin = new Redis(redis.url);
    await admin.config('SET', 'client-output-buffer-limit', `pubsub ${PUBSUB_LIMIT_BYTES} 0 0`);
    await admin.quit();
  });

  afterAll(async () => {
    await redis?.down();
  });

  async function stallGatewayDuringStreams(workerEnv: Record<string, string>): Promise<{
    outcomes: Outcome[];
    stack: Stack;
  }> {
    const stack = await Stack.start({
      redisUrl: redis.url,
      catalog: {
        models: [
          {
            id: MODEL,
            type: 'chat',
            owned_by: 'faults',
            // A pause before the first token lines the streams up: all of them run at full speed at once.
            backend: { kind: 'simulator', mode: 'words', maxWords: 4096, ttftMs: 1000, tokensPerSecond: 0 },
          },
        ],
      },
      without: ['image-worker'],
      waitForModels: [MODEL],
      // The stall must not look like a dead worker: this test is about the subscriber, not the lease.
      appEnv: {
        gateway: { WORKER_SILENCE_MS: '20000' },
        'chat-worker': { WORKER_CONCURRENCY: String(STREAMS), ...workerEnv },
      },
    });
    try {
      const gateway = stack.processes.get('gateway')!;
      // Set from the streams' callbacks: a holder, so the type checker sees it may be set.
      const stalling: { done: Promise<void> | null } = { done: null };
      const stall = async () => {
        gateway.kill('SIGSTOP');
        await new Promise((r) => setTimeout(r, STALL_MS));
        gateway.kill('SIGCONT');
      };
      // Every stream is accepted (its headers are out at enqueue) before any is read, so each one's job is
      // queued or running when the gateway stops: the stall begins with the first event of any stream,
      // not after the last one started, by which time the first could have ended on a slow box.
      const responses = await Promise.all(
        Array.from({ length: STREAMS }, (_, i) =>
          stack.post('/v1/chat/completions', {
            model: MODEL,
            stream: true,
            n: CHOICES,
            seed: i,
            messages: [{ role: 'user', content: 'talk' }],
          }),
        ),
      );
      const streams = responses.map(async (res): Promise<Outcome> => {
        expect(res.status).toBe(200);
        const outcome: Outcome = { finished: false, error: null, done: false, chars: 0 };
        for await (const event of readSse(res.body!)) {
          // The gateway stops reading Redis for a while, with every stream's job on its way.
          stalling.done ??= stall();
          if (event.data === '[DONE]') {
            outcome.done = true;
            continue;
          }
          const chunk = JSON.parse(event.data) as {
            choices?: { delta: { content?: string }; finish_reason: string | null }[];
            error?: { message: string };
          };
          if (chunk.error) outcome.error = chunk.error.message;
          for (const choice of chunk.choices ?? []) {
            outcome.chars += choice.delta.content?.length ?? 0;
            if (choice.finish_reason !== null) outcome.finished = true;
          }
        }
        return outcome;
      });
      const outcomes = await Promise.all(streams);
      await stalling.done;
      return { outcomes, stack };
    } catch (error) {
      await stack.stop();
      throw error;
    }
  }

  it('without flow control, Redis drops the subscriber and every open stream ends with an error, none looks finished', async () => {
    const { outcomes, stack } = await stallGatewayDuringStreams({ REPLY_BACKLOG_BYTES: '0' });
    try {
      for (const outcome of outcomes) {
        expect(outcome.done).toBe(true);
        // Each stream either ended before the drop, or heard the error: never a clean end with lost output.
        if (outcome.error !== null) expect(outcome.finished).toBe(false);
      }
      expect(outcomes.filter((o) => o.error !== null).length).toBeGreaterThan(0);
      // The gateway names the cause (its log is written asynchronously).
      await waitFor('the gateway to log the lost subscription', () =>
        stack.logs('gateway').includes('reply subscription lost'),
      );
    } finally {
      await stack.stop();
    }
  }, 180_000);

  it('with flow control, the workers wait for the gateway and every stream completes', async () => {
    const { outcomes, stack } = await stallGatewayDuringStreams({
      REPLY_BACKLOG_BYTES: String(256 * 1024),
    });
    try {
      expect(stack.logs('gateway')).not.toContain('reply subscription lost');
      for (const outcome of outcomes) {
        expect(outcome).toEqual({
          finished: true,
          error: null,
          done: true,
          chars: expect.any(Number) as number,
        });
        expect(outcome.chars).toBeGreaterThan(0);
      }
    } finally {
      await stack.stop();
    }
  }, 180_000);
});
