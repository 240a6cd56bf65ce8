import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';
import { performance } from 'node:perf_hooks';
import { setImmediate as yieldToLoop } from 'node:timers/promises';

/** A request line of a batch's input file. */
export interface InputLine {
  /** Its place among the file's request lines (blank lines are none), 0-based: its result's key. */
  index: number;
  /** Its line in the file, 1-based, for errors. */
  number: number;
  text: string;
}

/**
 * How long the lines' handling (reading them here, and what the caller does with each) runs between two
 * yields to the event loop: a live request waits at most about this long behind a batch's file.
 */
const SLICE_MS = 4;

/**
 * The request lines of `content` as they arrive, never the whole file: blank lines are skipped, and the
 * event loop gets a turn every few milliseconds so a large file does not hold up live requests.
 */
export async function* inputLines(content: Readable): AsyncGenerator<InputLine> {
  const reader = createInterface({ input: content, crlfDelay: Infinity });
  let number = 0;
  let index = 0;
  let sliceStart = performance.now();
  try {
    for await (const text of reader) {
      number++;
      if (text.trim() === '') continue;
      yield { index: index++, number, text };
      if (performance.now() - sliceStart >= SLICE_MS) {
        await yieldToLoop();
        sliceStart = performance.now();
      }
    }
  } finally {
    reader.close();
    content.destroy();
  }
}
