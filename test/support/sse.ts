/** Reads a `text/event-stream` body into its raw events, timestamping each one as it arrives. */
export interface SseEvent {
  data: string;
  /** The event's `id:` (a chat stream's events carry one: where a resume starts), if it has one. */
  id?: string;
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
      const id = lines.length === 2 && lines[0]!.startsWith('id: ') ? lines.shift()!.slice(4) : undefined;
      if (lines.length !== 1 || !lines[0]!.startsWith('data: ')) {
        throw new Error(`not a single data line: ${JSON.stringify(block)}`);
      }
      const data = lines[0]!.slice('data: '.length);
      yield id === undefined ? { data, at: Date.now() } : { data, id, at: Date.now() };
    }
  }
  if (buffer.length > 0) throw new Error(`stream ended inside an event: ${JSON.stringify(buffer)}`);
}

/** Every event of a stream, read to its end. */
export async function collectSseEvents(body: ReadableStream<Uint8Array>): Promise<SseEvent[]> {
  const events: SseEvent[] = [];
  for await (const event of readSse(body)) events.push(event);
  return events;
}

/** Every event's data, read to the stream's end. */
export async function collectSse(body: ReadableStream<Uint8Array>): Promise<string[]> {
  return (await collectSseEvents(body)).map((event) => event.data);
}
