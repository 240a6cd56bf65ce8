import { createParser, type EventSourceMessage } from 'eventsource-parser';

/**
 * The events of an SSE body, each yielded as soon as the network chunk that completes it arrives:
 * nothing is held back waiting for more, so the upstream's spacing between events is kept.
 */
export async function* readServerSentEvents(
  body: AsyncIterable<Buffer | string>,
): AsyncGenerator<EventSourceMessage> {
  const ready: EventSourceMessage[] = [];
  const parser = createParser({ onEvent: (event) => ready.push(event) });
  const decoder = new TextDecoder();
  for await (const chunk of body) {
    parser.feed(typeof chunk === 'string' ? chunk : decoder.decode(chunk, { stream: true }));
    for (let i = 0; i < ready.length; i++) yield ready[i]!;
    ready.length = 0;
  }
  parser.feed(decoder.decode());
  // An event cut off before its blank line was never completed; it is dropped, as EventSource does.
  yield* ready;
}
