/** Reads a `text/event-stream` body into its raw events, timestamping each one as it arrives. */
export interface SseEvent {
  data: string;
  at: number;
}

export async function* readSse(body: ReadableStream<Uint8Array>): AsyncGenerator<SseEvent> {
  const decoder = new TextDecoder();
  let buffer = '';
  for await (const chunk of body as unknown as AsyncIterable<Uint8Array>) {
    buffer += decoder.decode(chunk, { stream: true });
    let end: number;
    while ((end = buffer.indexOf('\n\n')) !== -1) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const lines = block.split('\n');
      if (lines.every((line) => line.startsWith(':'))) continue; // keep-alive comments
      if (lines.length !== 1 || !lines[0]!.startsWith('data: ')) {
        throw new Error(`not a single data line: ${JSON.stringify(block)}`);
      }
      yield { data: lines[0]!.slice('data: '.length), at: Date.now() };
    }
  }
  if (buffer.length > 0) throw new Error(`stream ended inside an event: ${JSON.stringify(buffer)}`);
}

export async function collectSse(body: ReadableStream<Uint8Array>): Promise<string[]> {
  const events: string[] = [];
  for await (const event of readSse(body)) events.push(event.data);
  return events;
}
