import type { UsageRecorder } from '@mgw/access';
import { UsageReporter } from './usage.reporter';

const SUBJECT = { requestId: 'r1', keyId: 'key_1', model: 'm' } as never;
const AMOUNTS = { promptTokens: 3, completionTokens: 4 } as never;

function reporter(failures: number, retryMs: number) {
  const errors: string[] = [];
  let calls = 0;
  const recorder = {
    record: () =>
      ++calls <= failures ? Promise.reject(new Error('Connection is closed.')) : Promise.resolve(),
  } as unknown as UsageRecorder;
  const logger = {
    log: () => undefined,
    error: (m: { msg: string }) => errors.push(m.msg),
    warn: () => undefined,
  };
  return { usage: new UsageReporter(recorder, logger, retryMs), errors, calls: () => calls };
}

describe('UsageReporter', () => {
  it('records a usage whose first writes meet a Redis failover, without an error', async () => {
    const { usage, errors, calls } = reporter(2, 10_000);
    await usage.report(SUBJECT, AMOUNTS);
    expect(calls()).toBe(3);
    expect(errors).toEqual([]);
  });

  it('gives up after its retry window and logs it, never throwing', async () => {
    const { usage, errors } = reporter(Number.POSITIVE_INFINITY, 250);
    await expect(usage.report(SUBJECT, AMOUNTS)).resolves.toBeUndefined();
    expect(errors).toEqual(['usage of request r1 not recorded: Error: Connection is closed.']);
  });
});

describe('UsageReporter with prices', () => {
  it("records a job's cost from its model's catalog prices, a batch line's at the batch factor", async () => {
    const recorded: unknown[] = [];
    const recorder = {
      record: (_subject: unknown, amounts: unknown) => Promise.resolve(void recorded.push(amounts)),
    } as unknown as UsageRecorder;
    const logger = { log: () => undefined, error: () => undefined, warn: () => undefined };
    const pricing = {
      inputPerMillion: 1_000_000,
      cachedInputPerMillion: 1_000_000,
      outputPerMillion: 2_000_000,
      embeddingPerMillion: 0,
      perImage: {},
      batchFactorPpm: 500_000,
    };
    const usage = new UsageReporter(recorder, logger, 1000, {
      kind: 'chat',
      of: (model) => (model === 'priced' ? pricing : undefined),
    });
    const amounts = { promptTokens: 1000, completionTokens: 1000, images: 0 };
    await usage.report({ requestId: 'r1', keyId: 'key_1', model: 'priced' }, amounts);
    await usage.report({ requestId: 'r2', keyId: 'key_1', model: 'priced', priority: 42 }, amounts);
    await usage.report({ requestId: 'r3', keyId: 'key_1', model: 'free' }, amounts);
    expect(recorded).toEqual([{ ...amounts, cost: 3000 }, { ...amounts, cost: 1500 }, amounts]);
  });
});

describe('UsageReporter counting for the metrics', () => {
  it("tells of a request's usage once: not when the record was a repeat", async () => {
    const firsts = [true, false];
    const recorder = { record: () => Promise.resolve(firsts.shift()) } as unknown as UsageRecorder;
    const logger = { log: () => undefined, error: () => undefined, warn: () => undefined };
    const counted: unknown[] = [];
    const usage = new UsageReporter(recorder, logger, 1000, null, (subject, amounts) =>
      counted.push([subject.teamId, amounts]),
    );
    const amounts = { promptTokens: 2, completionTokens: 3, images: 0 };
    const subject = { requestId: 'r1', keyId: 'key_1', model: 'm', teamId: 'team_1' };
    await usage.report(subject, amounts);
    await usage.report(subject, amounts);
    expect(counted).toEqual([['team_1', amounts]]);
  });
});
