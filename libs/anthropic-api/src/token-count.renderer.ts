import { GatewayError, type DoneMessage } from '@mgw/contracts';
import type { JsonRenderer } from '@mgw/session';

/** `count_tokens`' answer. */
export interface TokenCount {
  input_tokens: number;
}

/**
 * The answer of a count-only job: the prompt's tokens its worker reports in a `chat-done` with no choices.
 * Output from such a job is a worker that did not count but generate, refused once as a worker failure.
 */
export class TokenCountRenderer implements JsonRenderer<TokenCount> {
  private refused = false;

  constructor(private readonly refuse: (error: GatewayError) => void) {}

  delta(): void {
    this.unexpected();
  }

  toolCall(): void {
    this.unexpected();
  }

  image(): void {
    this.unexpected();
  }

  done(message: DoneMessage): TokenCount {
    if (message.kind !== 'chat-done' || message.finishReasons.length > 0) {
      throw GatewayError.workerFailed('The model worker answered a token count with a generation.');
    }
    return { input_tokens: message.usage.prompt_tokens };
  }

  private unexpected(): void {
    if (this.refused) return;
    this.refused = true;
    this.refuse(GatewayError.workerFailed('The model worker answered a token count with a generation.'));
  }
}
