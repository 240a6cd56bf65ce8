import { ProtocolError } from './protocol.error';

/**
 * Most messages a worker puts in one frame (one PUBLISH). A frame is either one message object or an array of
 * them: the messages a worker produced within one event-loop turn, for any requests of one gateway instance.
 */
export const MAX_REPLY_FRAME_MESSAGES = 1024;

/** One PUBLISH payload from already-encoded messages, in order. */
export function encodeReplyFrame(messages: readonly string[]): string {
  return messages.length === 1 ? messages[0]! : `[${messages.join(',')}]`;
}

/**
 * Splits a frame into its messages, still unchecked (see `parseReplyRecord`), so that one malformed message
 * fails only its own request.
 */
export function parseReplyFrame(raw: string): unknown[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw new ProtocolError('not JSON');
  }
  if (!Array.isArray(parsed)) return [parsed];
  if (parsed.length === 0 || parsed.length > MAX_REPLY_FRAME_MESSAGES) {
    throw new ProtocolError(`a frame holds 1 to ${MAX_REPLY_FRAME_MESSAGES} messages, not ${parsed.length}`);
  }
  return parsed;
}
