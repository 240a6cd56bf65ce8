import type { EmbeddingBackend, EmbeddingBatchRequest } from '@mgw/inference';
import { EmbeddingBatcher, type EmbeddingBatchPolicy } from './embedding.batcher';

/** A backend whose calls end when the test says, recording what each carried. */
class HeldBackend implements EmbeddingBackend {
  readonly calls: EmbeddingBatchRequest['inputs'][] = [];
  private readonly releases: (() => void)[] = [];

  embed(request: EmbeddingBatchRequest): Promise<Float32Array[]> {
    this.calls.push(request.inputs);
    return new Promise((resolve) =>
      this.releases.push(() => resolve(request.inputs.map((input) => Float32Array.of(String(input).length)))),
    );
  }

  release(): void {
    this.releases.shift()?.();
  }

  async close(): Promise<void> {}
}

const POLICY: EmbeddingBatchPolicy = {
  maxBatchInputs: 4,
  maxBatchDelayMs: 1000,
  dimensions: 1,
  parallelCalls: 1,
};
const tick = () => new Promise((resolve) => setImmediate(resolve));

describe('EmbeddingBatcher', () => {
  let backend: HeldBackend;

  beforeEach(() => {
    backend = new HeldBackend();
  });

  it('sends at once when the queue has nothing waiting, and gathers what arrives during a call', async () => {
    const batcher = new EmbeddingBatcher(backend, POLICY, () => Promise.resolve(false));
    const first = batcher.embed(['a'], new AbortController().signal);
    await tick();
    expect(backend.calls).toEqual([['a']]);
    const second = batcher.embed(['bb'], new AbortController().signal);
    const third = batcher.embed(['ccc', 'dddd'], new AbortController().signal);
    await tick();
    expect(backend.calls).toHaveLength(1);
    backend.release();
    expect(await first).toEqual([Float32Array.of(1)]);
    await tick();
    expect(backend.calls[1]).toEqual(['bb', 'ccc', 'dddd']);
    backend.release();
    expect(await second).toEqual([Float32Array.of(2)]);
    expect(await third).toEqual([Float32Array.of(3), Float32Array.of(4)]);
    batcher.close();
  });

  it('waits for a batch to fill while jobs wait in the queue, and sends a full one without waiting', async () => {
    const batcher = new EmbeddingBatcher(backend, POLICY, () => Promise.resolve(true));
    const signal = new AbortController().signal;
    const answers = [batcher.embed(['a', 'b'], signal), batcher.embed(['c'], signal)];
    await tick();
    expect(backend.calls).toEqual([]);
    // Three wait; two more would make five, so the three go now and the job of two waits whole.
    answers.push(batcher.embed(['d', 'e'], signal));
    await tick();
    expect(backend.calls).toEqual([['a', 'b', 'c']]);
    answers.push(batcher.embed(['f'], signal));
    backend.release();
    await tick();
    // Three wait again, jobs are still queued and the delay has not passed: no call yet.
    expect(backend.calls).toHaveLength(1);
    answers.push(batcher.embed(['g'], signal));
    await tick();
    expect(backend.calls[1]).toEqual(['d', 'e', 'f', 'g']);
    backend.release();
    expect((await Promise.all(answers)).map((vectors) => vectors.length)).toEqual([2, 1, 2, 1, 1]);
    batcher.close();
  });

  it('splits a job of more inputs than a batch into several calls, in order', async () => {
    const batcher = new EmbeddingBatcher(backend, POLICY, () => Promise.resolve(false));
    const answer = batcher.embed(['1', '22', '333', '4444', '55555'], new AbortController().signal);
    await tick();
    backend.release();
    await tick();
    backend.release();
    expect(backend.calls).toEqual([['1', '22', '333', '4444'], ['55555']]);
    expect((await answer).map((vector) => vector[0])).toEqual([1, 2, 3, 4, 5]);
    batcher.close();
  });

  it("removes only a cancelled job's inputs from the batch it waits for", async () => {
    const batcher = new EmbeddingBatcher(backend, POLICY, () => Promise.resolve(false));
    const first = batcher.embed(['busy'], new AbortController().signal);
    await tick();
    const leaving = new AbortController();
    const staying = batcher.embed(['stays'], new AbortController().signal);
    const left = batcher.embed(['leaves'], leaving.signal);
    leaving.abort(new Error('client gone'));
    await expect(left).rejects.toThrow('client gone');
    backend.release();
    await first;
    await tick();
    expect(backend.calls[1]).toEqual(['stays']);
    backend.release();
    expect(await staying).toEqual([Float32Array.of(5)]);
    batcher.close();
  });
});
