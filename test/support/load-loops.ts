import { performance } from 'node:perf_hooks';

/** One chat request, non-streaming; its status and latency in ms. */
export async function timedChat(
  base: string,
  key: string,
  model: string,
): Promise<{ status: number; ms: number; body: string }> {
  const started = performance.now();
  const res = await fetch(`${base}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }] }),
  });
  const body = await res.text();
  return { status: res.status, ms: performance.now() - started, body };
}

/**
 * `inFlight` loops each sending one request after another until `stop` aborts: how many were answered 200
 * while `counting` (a window opened and closed by the caller), and how many were refused (any other status;
 * a refused request is sent again after `retryMs`, so a flood holds the queue at its bound).
 */
export class Flood {
  answered = 0;
  refused = 0;
  counting = false;
  private readonly loops: Promise<void>[] = [];
  private readonly stop = new AbortController();

  constructor(
    base: string,
    key: string,
    model: string,
    inFlight: number,
    private readonly retryMs = 20,
  ) {
    for (let i = 0; i < inFlight; i++) this.loops.push(this.loop(base, key, model));
  }

  private async loop(base: string, key: string, model: string): Promise<void> {
    while (!this.stop.signal.aborted) {
      const { status } = await timedChat(base, key, model).catch(() => ({ status: 0 }));
      if (status === 200) {
        if (this.counting) this.answered++;
      } else {
        this.refused++;
        await new Promise((resolve) => setTimeout(resolve, this.retryMs));
      }
    }
  }

  /** Stops sending and waits for the requests in flight. */
  async end(): Promise<void> {
    this.stop.abort();
    await Promise.all(this.loops);
  }
}

export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** Jain's fairness index of the shares: 1 when all are equal, 1/n when one takes everything. */
export function jainIndex(values: readonly number[]): number {
  const sum = values.reduce((a, b) => a + b, 0);
  const squares = values.reduce((a, b) => a + b * b, 0);
  return squares === 0 ? 0 : (sum * sum) / (values.length * squares);
}
