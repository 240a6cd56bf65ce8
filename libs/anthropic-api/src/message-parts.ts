import type { ChatDoneMessage, FinishReason } from '@mgw/contracts';
import type { MessagesUsage, StopReason } from './messages.types';

/** A message's id: the request's, so one id names the request in logs, headers and answers. */
export const messageIdFor = (requestId: string): string => `msg_${requestId}`;

/** A tool use's id as Anthropic spells them (`toolu_…`), from the id the backend gave the call. */
export function toolUseIdOf(callId: string): string {
  if (callId.startsWith('toolu_')) return callId;
  return `toolu_${callId.startsWith('call_') ? callId.slice('call_'.length) : callId}`;
}

const STOP_REASONS: Readonly<Record<FinishReason, StopReason>> = {
  stop: 'end_turn',
  length: 'max_tokens',
  tool_calls: 'tool_use',
  content_filter: 'refusal',
};

/** Why the message ended, in Anthropic's words, and the stop sequence that ended it, if one did. */
export function stopOf(done: ChatDoneMessage): { stop_reason: StopReason; stop_sequence: string | null } {
  const reason = done.finishReasons[0] ?? 'stop';
  const sequence = done.stopSequence ?? null;
  if (reason === 'stop' && sequence !== null)
    return { stop_reason: 'stop_sequence', stop_sequence: sequence };
  return { stop_reason: STOP_REASONS[reason], stop_sequence: null };
}

/** The usage of a message; no backend of ours caches prompts, so nothing is ever read from a cache. */
export function usageOf(done: ChatDoneMessage): MessagesUsage {
  return {
    input_tokens: done.usage.prompt_tokens,
    output_tokens: done.usage.completion_tokens,
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: 0,
  };
}
