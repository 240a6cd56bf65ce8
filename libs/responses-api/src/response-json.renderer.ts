import {
  GatewayError,
  type ChatDoneMessage,
  type ImageDoneMessage,
  type ToolCallMessage,
} from '@mgw/contracts';
import { BoundedJsonRenderer, type StreamRenderer } from '@mgw/session';
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
 * A non-streaming response: the replies collected into one response object, refused at once past its bound
 * and kept before it is answered with `keep` (a stored response), as `BoundedJsonRenderer` does.
 */
export class ResponseJsonRenderer extends BoundedJsonRenderer<ResponseObject> {
  constructor(
    base: ResponseBase,
    refuse: (error: GatewayError) => void,
    keep: ((response: ResponseObject) => Promise<void>) | null = null,
  ) {
    const output = new ResponseOutput(base);
    super(
      {
        add: (_choice, content) => output.text(content),
        addToolCall: (piece) => output.toolCall(piece),
        finish: (done) => output.finish(done),
        tooLarge,
      },
      refuse,
      keep,
    );
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
    void this.record(this.output.failed(error));
  }

  /** The job goes on without this gateway (it shuts down): whoever reads the response next finds it. */
  moved(): void {}
}
