import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';
import { setImmediate as yieldToLoop } from 'node:timers/promises';

/** A request line of a batch's input file. */
export interface InputLine {
  /** Its place among the file's request lines (blank lines are none), 0-based: its result's key. */
  index: number;
  /** Its line in the file, 1-based, for errors. */
  number: number;
  text: string;
}

/** How many lines are handled between two yields to the event loop. */
const LINES_PER_YIELD = 256;

/**
 * The request lines of `content` as they arrive, never the whole file: blank lines are skipped, and the
 * event loop gets a turn every few hundred lines so a large file does not hold up live requests.
 */
export async function* inputLines(content: Readable): AsyncGenerator<InputLine> {
  const reader = createInterface({ input: content, crlfDelay: Infinity });
  let number = 0;
  let index = 0;
  try {
    for await (const text of reader) {
      number++;
      if (text.trim() === '') continue;
      yield { index: index++, number, text };
      if (index % LINES_PER_YIELD === 0) await yieldToLoop();
    }
  } finally {
    reader.close();
    content.destroy();
  }
}
