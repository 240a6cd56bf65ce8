import {
  GatewayError,
  type ChatDoneMessage,
  type ImageDoneMessage,
  type ToolCallMessage,
} from '@mgw/contracts';
import type { JsonRenderer, StreamRenderer } from '@mgw/session';
import { inResponsesWords } from './chat-request.translator';
import { MAX_RESPONSE_CHARS, ResponseOutput, type ResponseBase } from './response-output';
import type { ResponseObject } from './responses.types';

function tooLarge(): GatewayError {
  return new GatewayError(
    502,
    'server_error',
    'response_too_large',
    `The model's answer is longer than ${MAX_RESPONSE_CHARS} characters, more than one response may hold. Stream it instead.`,
  );
}

/**
 * A non-streaming response: the replies collected into one response object. An answer past its bound is
 * refused at once (`refuse`: the session answers 502 and stops the job). With `keep` (a stored response)
 * the response is kept before it is answered, so the client can fetch it as soon as it has it.
 */
export class ResponseJsonRenderer implements JsonRenderer<ResponseObject> {
  private whole = true;
  private readonly output: ResponseOutput;

  constructor(
    base: ResponseBase,
    private readonly refuse: (error: GatewayError) => void,
    private readonly keep: ((response: ResponseObject) => Promise<void>) | null = null,
  ) {
    this.output = new ResponseOutput(base);
  }

  delta(_choice: number, content: string): void {
    if (this.whole && !this.output.text(content)) this.tooLarge();
  }

  toolCall(piece: ToolCallMessage): void {
    if (this.whole && !this.output.toolCall(piece)) this.tooLarge();
  }

  image(): void {}

  done(message: ChatDoneMessage | ImageDoneMessage): ResponseObject | Promise<ResponseObject> {
    const response = this.output.finish(message as ChatDoneMessage);
    if (this.keep === null) return response;
    return this.keep(response).then(
      () => response,
      () => response,
    );
  }

  private tooLarge(): void {
    this.whole = false;
    this.refuse(tooLarge());
  }
}

/**
 * A background response's renderer: nobody listens, so the outcome is recorded (`record`) — the final
 * response, or the failed one. A response that outgrows its bound is recorded as failed.
 */
export class ResponseRecorder implements StreamRenderer {
  private whole = true;
  private readonly output: ResponseOutput;

  constructor(
    base: ResponseBase,
    private readonly record: (response: ResponseObject) => Promise<void>,
  ) {
    this.output = new ResponseOutput(base);
  }

  delta(_choice: number, content: string): void {
    this.whole = this.whole && this.output.text(content);
  }

  toolCall(piece: ToolCallMessage): void {
    this.whole = this.whole && this.output.toolCall(piece);
  }

  image(): void {}

  done(message: ChatDoneMessage | ImageDoneMessage): void {
    const response = this.whole
      ? this.output.finish(message as ChatDoneMessage)
      : this.output.failed(tooLarge());
    void this.record(response);
  }

  error(error: GatewayError): void {
    void this.record(this.output.failed(inResponsesWords(error)));
  }

  /** The job goes on without this gateway (it shuts down): whoever reads the response next finds it. */
  moved(): void {}
}
