import type { ChatCompletion, ChatDoneMessage, ImageDoneMessage } from '@mgw/contracts';
import type { StreamRenderer } from '@mgw/session';
import type { CompletionAssembler } from './completion.assembler';

/**
 * Taps a stream's replies to assemble its `chat.completion` for storing (`store: true`): a renderer that
 * wraps the stream's own. Every reply goes on to `renderer` as it comes; at the end the completion is kept
 * first and the final chunk and `[DONE]` follow, so a client that fetches the completion right after
 * `[DONE]` finds it. An answer past the assembler's bound streams on but is not stored; an error ends it
 * unstored.
 */
export function capturingCompletion(
  renderer: StreamRenderer,
  assembler: CompletionAssembler,
  keep: (completion: ChatCompletion | null) => Promise<void>,
): StreamRenderer {
  let whole = true;
  return {
    delta: (choice, content, logprobs) => {
      whole = whole && assembler.add(choice, content, logprobs);
      renderer.delta(choice, content, logprobs);
    },
    toolCall: (piece) => {
      whole = whole && assembler.addToolCall(piece);
      renderer.toolCall(piece);
    },
    image: (message) => renderer.image(message),
    done: (done: ChatDoneMessage | ImageDoneMessage) => {
      const completion = whole && done.kind === 'chat-done' ? assembler.finish(done) : null;
      void keep(completion).finally(() => renderer.done(done));
    },
    error: (error) => renderer.error(error),
    moved: () => renderer.moved(),
  };
}
