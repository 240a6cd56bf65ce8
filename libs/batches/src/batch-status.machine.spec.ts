import { isTerminal, nextBatchStep, type BatchEvent } from './batch-status.machine';
import type { BatchEnding, BatchStatus } from './batch.types';

describe('nextBatchStep', () => {
  const cases: [
    BatchStatus,
    BatchEvent['type'],
    BatchEnding | undefined,
    ReturnType<typeof nextBatchStep>,
  ][] = [
    ['validating', 'validated', undefined, { status: 'in_progress' }],
    ['validating', 'invalid', undefined, { status: 'failed' }],
    ['validating', 'cancel', undefined, { status: 'cancelling', ending: 'cancelled' }],
    ['validating', 'expire', undefined, { status: 'finalizing', ending: 'expired' }],
    ['validating', 'drained', undefined, null],
    ['in_progress', 'drained', undefined, { status: 'finalizing', ending: 'completed' }],
    ['in_progress', 'cancel', undefined, { status: 'cancelling', ending: 'cancelled' }],
    ['in_progress', 'expire', undefined, { status: 'finalizing', ending: 'expired' }],
    ['in_progress', 'validated', undefined, null],
    ['finalizing', 'finalized', 'completed', { status: 'completed' }],
    ['finalizing', 'finalized', 'expired', { status: 'expired' }],
    ['finalizing', 'cancel', undefined, null],
    ['cancelling', 'finalized', 'cancelled', { status: 'cancelled' }],
    ['cancelling', 'expire', undefined, null],
    ['cancelling', 'cancel', undefined, null],
    ['completed', 'cancel', undefined, null],
    ['failed', 'validated', undefined, null],
    ['expired', 'finalized', 'expired', null],
    ['cancelled', 'finalized', 'cancelled', null],
  ];

  it.each(cases)('%s on %s (%s) → %j', (status, type, ending, expected) => {
    expect(nextBatchStep(status, { type }, ending)).toEqual(expected);
  });

  it('knows the terminal statuses', () => {
    expect(['completed', 'failed', 'expired', 'cancelled'].every((s) => isTerminal(s as BatchStatus))).toBe(
      true,
    );
    expect(
      ['validating', 'in_progress', 'finalizing', 'cancelling'].some((s) => isTerminal(s as BatchStatus)),
    ).toBe(false);
  });
});
