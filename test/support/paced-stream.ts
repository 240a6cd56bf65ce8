import { readSse } from './sse';
import type { Stack } from './stack';

/**
 * Streams a paced answer from `model` until `[DONE]` and reports the largest gap between two chunks and how
 * many arrived: the measure of whether something else held the gateway's or the worker's event loop.
 * `onFirstChunk` starts that something once the stream is known to be flowing.
 */
export async function pacedStreamGaps(
  stack: Stack,
  model: string,
  onFirstChunk: () => void,
): Promise<{ maxGapMs: number; chunks: number }> {
  const response = await stack.post('/v1/chat/completions', {
    model,
    stream: true,
    messages: [{ role: 'user', content: 'Tell me a story.' }],
  });
  expect(response.status).toBe(200);
  let last: number | null = null;
  let maxGapMs = 0;
  let chunks = 0;
  let done = false;
  for await (const event of readSse(response.body!)) {
    if (event.data === '[DONE]') {
      done = true;
      break;
    }
    expect(JSON.parse(event.data)).not.toHaveProperty('error');
    if (last === null) onFirstChunk();
    else maxGapMs = Math.max(maxGapMs, event.at - last);
    last = event.at;
    chunks++;
  }
  expect(done).toBe(true);
  return { maxGapMs, chunks };
}
