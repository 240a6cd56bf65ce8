import { EventSourceParserStream } from 'eventsource-parser/stream';

/**
 * The `data` payloads of a text/event-stream, as they arrive, parsed by `eventsource-parser` (the three
 * line endings, `data:` lines of one event joined with newlines, comments such as `: keep-alive` and the
 * other fields skipped). A partial event at the end of the body is dropped, as EventSource does. Leaving
 * early cancels the body, so the connection closes.
 */
export async function* readSseData(body: ReadableStream<Uint8Array>): AsyncGenerator<string> {
  // TypeScript's DOM types give TextDecoderStream a writable side of BufferSource, which it does not match
  // with a stream of Uint8Array; the bytes are the same.
  const decoder = new TextDecoderStream() as unknown as TransformStream<Uint8Array, string>;
  const events = body.pipeThrough(decoder).pipeThrough(new EventSourceParserStream()).getReader();
  try {
    for (;;) {
      const { done, value } = await events.read();
      if (done) return;
      yield value.data;
    }
  } finally {
    await events.cancel();
  }
}
