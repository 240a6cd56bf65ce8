import type {
  ChatCompletion,
  ChatDoneMessage,
  GatewayError,
  ImageDoneMessage,
  TokenLogprob,
  ToolCallMessage,
} from '@mgw/contracts';
import type { JsonRenderer } from '@mgw/session';
import type { CompletionAssembler } from './completion.assembler';

/**
 * A non-streaming chat answer: the replies assembled into one `chat.completion`. An answer past the
 * assembler's bound is refused at once (`refuse`: the session answers 502 and stops the job); what still
 * arrives is not collected. With `keep` (a stored completion) the completion is kept before it is answered,
 * so the client can fetch it as soon as it has it.
 */
export class CompletionJsonRenderer implements JsonRenderer<ChatCompletion> {
  private whole = true;

  constructor(
    private readonly assembler: CompletionAssembler,
    private readonly refuse: (error: GatewayError) => void,
    private readonly keep: ((completion: ChatCompletion) => Promise<void>) | null = null,
  ) {}

  delta(choice: number, content: string, logprobs?: TokenLogprob[]): void {
    if (this.whole && !this.assembler.add(choice, content, logprobs)) this.tooLarge();
  }

  toolCall(piece: ToolCallMessage): void {
    if (this.whole && !this.assembler.addToolCall(piece)) this.tooLarge();
  }

  /** A chat answer has no images. */
  image(): void {}

  done(message: ChatDoneMessage | ImageDoneMessage): ChatCompletion | Promise<ChatCompletion> {
    const completion = this.assembler.finish(message as ChatDoneMessage);
    if (this.keep === null) return completion;
    return this.keep(completion).then(
      () => completion,
      () => completion,
    );
  }

  private tooLarge(): void {
    this.whole = false;
    this.refuse(this.assembler.tooLarge());
  }
}
