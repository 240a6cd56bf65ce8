import { jobPriorityOf } from '@mgw/access';
import { SCHEDULING_BANDS, tierOfPriority } from '@mgw/contracts';
import { batchPrincipal } from './batch.driver';
import { readCreateBatch } from './batches.service';

describe('readCreateBatch', () => {
  const base = { input_file_id: 'file-1', endpoint: '/v1/embeddings', completion_window: '24h' };

  it('reads a create body', () => {
    expect(readCreateBatch({ ...base, metadata: { team: 'eval' } })).toEqual({
      inputFileId: 'file-1',
      endpoint: '/v1/embeddings',
      metadata: { team: 'eval' },
    });
    expect(readCreateBatch(base).metadata).toBeNull();
  });

  it.each([
    ['no input file', { ...base, input_file_id: undefined }, 'input_file_id'],
    ['another endpoint', { ...base, endpoint: '/v1/images/generations' }, 'endpoint'],
    ['another window', { ...base, completion_window: '1h' }, 'completion_window'],
    ['metadata not an object', { ...base, metadata: 'x' }, 'metadata'],
    ['a metadata value not a string', { ...base, metadata: { a: 1 } }, 'metadata.a'],
    [
      'too many metadata keys',
      { ...base, metadata: Object.fromEntries([...Array(17).keys()].map((k) => [`k${k}`, 'v'])) },
      'metadata',
    ],
    ['an unknown field', { ...base, priority: 'high' }, 'priority'],
  ])('refuses %s with a 400 naming the field', (_name, body, param) => {
    expect(() => readCreateBatch(body)).toThrow(expect.objectContaining({ status: 400, param }) as Error);
  });
});

describe('batchPrincipal', () => {
  it("runs a batch's lines as its key in the batch tier, outside its interactive limits", () => {
    const principal = batchPrincipal({
      keyId: 'key_1',
      name: 'k',
      bootstrap: false,
      models: ['m'],
      weight: 3,
    });
    expect(principal).toMatchObject({ keyId: 'key_1', rpm: null, tpm: null, maxConcurrent: null, weight: 3 });
    expect(principal.models).toEqual(new Set(['m']));
    const priority = jobPriorityOf(principal.priority);
    expect(priority).toBe(SCHEDULING_BANDS.batch.parked);
    expect(tierOfPriority(priority)).toBe('batch');
  });
});
