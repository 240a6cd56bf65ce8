import { createParser, type EventSourceMessage, type ParseError } from 'eventsource-parser';
import { upstreamProtocolError } from './upstream-error.mapper';

/** A chat chunk is a few hundred bytes; an "event" this large is a broken or hostile stream. */
export const MAX_EVENT_CHARS = 8 * 1024 * 1024;

/**
 * The events of an SSE body, each yielded as soon as the network chunk that completes it arrives:
 * nothing is held back waiting for more, so the upstream's spacing between events is kept.
 */
export async function* readServerSentEvents(
  body: AsyncIterable<Buffer | string>,
  maxEventChars = MAX_EVENT_CHARS,
): AsyncGenerator<EventSourceMessage> {
  const ready: EventSourceMessage[] = [];
  let overflow: ParseError | null = null;
  const parser = createParser({
    onEvent: (event) => ready.push(event),
    onError: (error) => {
      if (error.type === 'max-buffer-size-exceeded') overflow = error;
    },
    maxBufferSize: maxEventChars,
  });
  const decoder = new TextDecoder();
  for await (const chunk of body) {
    parser.feed(typeof chunk === 'string' ? chunk : decoder.decode(chunk, { stream: true }));
    for (let i = 0; i < ready.length; i++) yield ready[i]!;
    ready.length = 0;
    if (overflow !== null) {
      throw upstreamProtocolError(`sent a stream event of more than ${maxEventChars} characters`);
    }
  }
  parser.feed(decoder.decode());
  // An event cut off before its blank line was never completed; it is dropped, as EventSource does.
  yield* ready;
}
