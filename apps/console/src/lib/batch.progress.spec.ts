import { batchCancellable, batchEnded, progressOf, resultFileName, resultFilesOf } from './batch.progress';

describe('batch progress', () => {
  it('counts answered and failed lines as done, in whole percent of the total', () => {
    expect(progressOf({ request_counts: { total: 5000, completed: 117, failed: 3 } })).toEqual({
      done: 120,
      total: 5000,
      percent: 2,
      label: '120 / 5,000 (2 %)',
    });
  });

  it('is 0 % while the total is not known (validating), never a division by zero', () => {
    expect(progressOf({ request_counts: { total: 0, completed: 0, failed: 0 } }).percent).toBe(0);
  });

  it.each([
    ['validating', false, true],
    ['in_progress', false, true],
    ['finalizing', false, true],
    ['cancelling', false, false],
    ['completed', true, false],
    ['failed', true, false],
    ['expired', true, false],
    ['cancelled', true, false],
  ] as const)('%s: ended %s, cancellable %s', (status, ended, cancellable) => {
    expect(batchEnded({ status })).toBe(ended);
    expect(batchCancellable({ status })).toBe(cancellable);
  });

  it('names result files after the batch', () => {
    expect(resultFileName('batch_1', 'errors')).toBe('batch_1.errors.jsonl');
  });

  it('lists the result files that exist, output first, one download each', () => {
    expect(resultFilesOf({ output_file_id: 'file-o', error_file_id: 'file-e' })).toEqual([
      { kind: 'output', fileId: 'file-o' },
      { kind: 'errors', fileId: 'file-e' },
    ]);
    expect(resultFilesOf({ output_file_id: null, error_file_id: 'file-e' })).toEqual([
      { kind: 'errors', fileId: 'file-e' },
    ]);
    expect(resultFilesOf({ output_file_id: null, error_file_id: null })).toEqual([]);
  });
});
