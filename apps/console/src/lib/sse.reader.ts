/**
 * The `data` payloads of a text/event-stream, as they arrive: events are split on blank lines (any of the
 * three line endings), `data:` lines of one event are joined with newlines, comments (`: keep-alive`) and
 * the other fields are skipped. A partial event at the end of the body is dropped, as EventSource does.
 */
export async function* readSseData(body: ReadableStream<Uint8Array>): AsyncGenerator<string> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      buffer += decoder.decode(value, { stream: true });
      let end: RegExpExecArray | null;
      while ((end = /\r\n\r\n|\n\n|\r\r/.exec(buffer)) !== null) {
        const block = buffer.slice(0, end.index);
        buffer = buffer.slice(end.index + end[0].length);
        const data = dataOf(block);
        if (data !== null) yield data;
      }
    }
  } finally {
    reader.releaseLock();
  }
}

function dataOf(block: string): string | null {
  const lines: string[] = [];
  for (const line of block.split(/\r\n|\n|\r/)) {
    if (line === 'data') lines.push('');
    else if (line.startsWith('data:')) lines.push(line.slice(line[5] === ' ' ? 6 : 5));
  }
  return lines.length > 0 ? lines.join('\n') : null;
}
