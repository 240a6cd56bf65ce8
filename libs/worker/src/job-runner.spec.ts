import { EventEmitter } from 'node:events';
import type { Job } from 'bullmq';
import { IsInt, IsString } from 'class-validator';
import type { Redis } from 'ioredis';
import { GatewayError } from '@mgw/contracts';
import { ControlListener, JobStopped, type ReplyBatcher } from '@mgw/queue';
import { PubSubDispatcher } from '@mgw/redis';
import { JobRunner, type JobContext } from './job-runner';

class TestJob {
  @IsString() requestId!: string;
  @IsString() model!: string;
  @IsString() replyTo!: string;
  @IsInt() deadline!: number;
}

interface Sent {
  kind: string;
  error?: { code: string | null };
}

/** A runner on a fake Redis: the publisher records what it sends and says whether anybody listened. */
function harness(listeners = 1) {
  const sent: Sent[] = [];
  const publisher = {
    publish: (_channel: string, message: string) => {
      sent.push(JSON.parse(message) as Sent);
      return Promise.resolve(listeners);
    },
    gateOf: () => null,
  } as unknown as ReplyBatcher;
  const subscriber = Object.assign(new EventEmitter(), { subscribe: () => Promise.resolve(1) });
  const warnings: string[] = [];
  const logger = {
    log: () => undefined,
    error: () => undefined,
    debug: () => undefined,
    warn: (message: string | { msg: string }) =>
      warnings.push(typeof message === 'string' ? message : message.msg),
  };
  const cancels = new ControlListener(
    new PubSubDispatcher(subscriber as unknown as Redis),
    'cancel-channel',
    logger,
  );
  const runner = new JobRunner(publisher, cancels, 'worker-1', logger, {
    heartbeatMs: 60_000,
    namespace: 'test',
  });
  return { sent, warnings, cancels, subscriber, runner };
}

const REQUEST_ID = '0123456789abcdef0123456789abcdef';

function jobFor(deadlineInMs: number): Job<unknown> {
  const data = { requestId: REQUEST_ID, model: 'm', replyTo: 'reply', deadline: Date.now() + deadlineInMs };
  return { id: REQUEST_ID, data, timestamp: Date.now() } as unknown as Job<unknown>;
}

/** Runs until its signal aborts, as a backend does; `running` resolves once it has started. */
function untilAborted() {
  let started!: () => void;
  const running = new Promise<void>((resolve) => (started = resolve));
  const execute = ({ signal }: JobContext<TestJob>) =>
    new Promise<void>((_resolve, reject) => {
      started();
      if (signal.aborted) reject(signal.reason as Error);
      signal.addEventListener('abort', () => reject(signal.reason as Error), { once: true });
    });
  return { running, execute };
}

const errorsOf = (sent: Sent[]) => sent.filter((m) => m.kind === 'error').map((m) => m.error?.code);

describe('JobRunner: how a job that stops early ends', () => {
  const runners: JobRunner[] = [];
  afterEach(() => runners.splice(0).forEach((runner) => runner.close()));

  it('a gateway cancel: cancelled, and the client hears nothing more', async () => {
    const { runner, sent, warnings, cancels, subscriber } = harness();
    runners.push(runner);
    await cancels.start();
    const { running, execute } = untilAborted();
    const outcome = runner.run(jobFor(60_000), TestJob, 'm', execute);
    await running;
    subscriber.emit(
      'message',
      'cancel-channel',
      JSON.stringify({ requestId: REQUEST_ID, reason: 'client_disconnected' }),
    );

    await expect(outcome).resolves.toBe('cancelled');
    expect(errorsOf(sent)).toEqual([]);
    expect(warnings).toEqual([]);
  });

  it('nobody listening: cancelled, with a warning for the operator', async () => {
    const { runner, sent, warnings } = harness(0);
    runners.push(runner);
    const { execute } = untilAborted();

    await expect(runner.run(jobFor(60_000), TestJob, 'm', execute)).resolves.toBe('cancelled');
    expect(errorsOf(sent)).toEqual([]);
    expect(warnings).toEqual([expect.stringContaining('its gateway is gone')]);
  });

  it('the deadline: expired, and the client hears deadline_exceeded', async () => {
    const { runner, sent, warnings } = harness();
    runners.push(runner);
    const { execute } = untilAborted();

    await expect(runner.run(jobFor(50), TestJob, 'm', execute)).resolves.toBe('expired');
    expect(errorsOf(sent)).toEqual(['deadline_exceeded']);
    expect(warnings).toEqual([]);
  });

  it('the worker stopping: failed, and the client hears the error it may retry', async () => {
    const { runner, sent, cancels } = harness();
    runners.push(runner);
    const { running, execute } = untilAborted();
    const outcome = runner.run(jobFor(60_000), TestJob, 'm', execute);
    await running;
    const error = GatewayError.serviceUnavailable('The model worker shut down before finishing.');
    expect(cancels.abortAll(new JobStopped({ kind: 'worker_stopping', error }))).toBe(1);

    await expect(outcome).resolves.toBe('failed');
    expect(errorsOf(sent)).toEqual([error.toWire().code]);
  });

  it('a failure that is no stop: thrown, and the client hears an opaque worker error', async () => {
    const { runner, sent } = harness();
    runners.push(runner);
    const failure = new Error('backend exploded at /secret/path');

    await expect(runner.run(jobFor(60_000), TestJob, 'm', () => Promise.reject(failure))).rejects.toBe(
      failure,
    );
    expect(errorsOf(sent)).toEqual([GatewayError.workerFailed('x').toWire().code]);
  });
});

describe('JobRunner: a failed job whose error meets a Redis failover', () => {
  it('tries the error again until it goes out, numbered after the frames that were lost', async () => {
    const { runner } = harness();
    const published: { kind: string; seq: number }[] = [];
    let failures = 3;
    // Redis is away for the job's output and the first tries of its error, then back (a promotion).
    (runner as unknown as { publisher: ReplyBatcher }).publisher = {
      publish: (_channel: string, message: string) => {
        if (failures-- > 0) return Promise.reject(new Error('Connection is closed.'));
        published.push(JSON.parse(message) as { kind: string; seq: number });
        return Promise.resolve(1);
      },
      gateOf: () => null,
    } as unknown as ReplyBatcher;
    const execute = async ({ writer }: JobContext<TestJob>) => {
      await writer.send({ kind: 'delta', index: 0, content: 'lost' } as never);
      await writer.flush();
    };

    await expect(runner.run(jobFor(60_000), TestJob, 'm', execute)).rejects.toThrow('Connection is closed.');
    expect(published).toEqual([expect.objectContaining({ kind: 'error' })]);
    // 'started', the delta and a first error were lost: the gateway sees the gap and ends its request.
    expect(published[0]!.seq).toBeGreaterThan(2);
    runner.close();
  });
});
