import type {
  ChatDoneMessage,
  GatewayError,
  ImageDoneMessage,
  TokenLogprob,
  ToolCallMessage,
} from '@mgw/contracts';
import type { JsonRenderer } from './session-request.types';

/**
 * A protocol's answer collected in memory up to a bound: every `add*` answers false once the answer grew
 * past it, and `tooLarge()` is the error that ends such a request.
 */
export interface BoundedAnswer<T> {
  add(choice: number, content: string, logprobs?: readonly TokenLogprob[]): boolean;
  addToolCall(piece: ToolCallMessage): boolean;
  finish(done: ChatDoneMessage): T;
  tooLarge(): GatewayError;
}

/**
 * A non-streaming chat answer, whatever its protocol: the replies collected into one object. An answer past
 * its bound is refused at once (`refuse`: the session answers 502 and stops the job); what still arrives is
 * not collected. With `keep` (a stored answer) the answer is kept before it is given, so the client can
 * fetch it as soon as it has it; one that could not be kept is still given.
 */
export class BoundedJsonRenderer<T> implements JsonRenderer<T> {
  private whole = true;

  constructor(
    private readonly answer: BoundedAnswer<T>,
    private readonly refuse: (error: GatewayError) => void,
    private readonly keep: ((answer: T) => Promise<void>) | null = null,
  ) {}

  delta(choice: number, content: string, logprobs?: TokenLogprob[]): void {
    if (this.whole && !this.answer.add(choice, content, logprobs)) this.tooLarge();
  }

  toolCall(piece: ToolCallMessage): void {
    if (this.whole && !this.answer.addToolCall(piece)) this.tooLarge();
  }

  /** A chat answer has no images. */
  image(): void {}

  done(message: ChatDoneMessage | ImageDoneMessage): T | Promise<T> {
    const answer = this.answer.finish(message as ChatDoneMessage);
    if (this.keep === null) return answer;
    return this.keep(answer).then(
      () => answer,
      () => answer,
    );
  }

  private tooLarge(): void {
    this.whole = false;
    this.refuse(this.answer.tooLarge());
  }
}
