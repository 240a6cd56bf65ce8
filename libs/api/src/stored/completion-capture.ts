import type { ChatCompletion } from '@mgw/contracts';
import type { CompletionAssembler } from '../chat/completion.assembler';
import type { ReplySink } from '../inflight/inflight-request';

/**
 * Taps a stream's replies to assemble its `chat.completion` for storing (`store: true`). Every reply goes on
 * to `sink` as it comes; at the end the completion is kept first and the final chunk and `[DONE]` follow, so
 * a client that fetches the completion right after `[DONE]` finds it. An answer past the assembler's bound
 * streams on but is not stored; an error ends it unstored. It forwards every callback a chat stream's sink
 * has: one added to `ReplySink` must be forwarded here too.
 */
export function capturingCompletion(
  sink: ReplySink,
  assembler: CompletionAssembler,
  keep: (completion: ChatCompletion | null) => Promise<void>,
): ReplySink {
  let whole = true;
  return {
    onDelta: (choice, content, logprobs) => {
      whole = whole && assembler.add(choice, content, logprobs);
      sink.onDelta?.(choice, content, logprobs);
    },
    onToolCall: (piece) => {
      whole = whole && assembler.addToolCall(piece);
      sink.onToolCall?.(piece);
    },
    onChatDone: (done) => {
      void keep(whole ? assembler.finish(done) : null).finally(() => sink.onChatDone?.(done));
    },
    onError: (error) => sink.onError(error),
    onMoved: () => sink.onMoved?.(),
  };
}
