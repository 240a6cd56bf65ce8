import {
  GatewayError,
  type ChatCompletion,
  type ChatCompletionMessage,
  type ChatDoneMessage,
  type ChoiceLogprobs,
  type TokenLogprob,
  type ToolCall,
  type ToolCallMessage,
} from '@mgw/contracts';
import { completionIdFor, systemFingerprintFor, toCompletionUsage } from './chat-chunk.serializer';

/**
 * How much one non-streaming answer may assemble in memory, in characters of text, tool-call arguments and
 * logprob tokens: far beyond any real answer, and a bound on what a faulty backend can make a gateway hold.
 */
export const MAX_ASSEMBLED_CHARS = 16 * 1024 * 1024;

/** What a logprob entry costs beyond its token's characters (its number, its bytes, its JSON). */
const LOGPROB_OVERHEAD_CHARS = 32;

interface PendingCall {
  id: string;
  name: string;
  arguments: string[];
}

/**
 * Collects a non-streaming request's deltas and tool-call pieces into the `chat.completion` object.
 * Every `add*` answers false once the answer grew past its bound; the caller then ends the request with
 * `tooLarge()` (nothing more is collected).
 */
export class CompletionAssembler {
  private readonly parts: string[][] = [];
  /** Per choice, by call index; only allocated for answers that call tools. */
  private calls: PendingCall[][] | null = null;
  /** Per choice; only allocated for answers with logprobs. */
  private logprobs: TokenLogprob[][] | null = null;
  private size = 0;

  constructor(
    private readonly requestId: string,
    private readonly model: string,
    private readonly created: number,
    private readonly maxChars = MAX_ASSEMBLED_CHARS,
  ) {}

  add(choice: number, content: string, logprobs?: readonly TokenLogprob[]): boolean {
    this.size += content.length;
    if (logprobs !== undefined) {
      for (const entry of logprobs) {
        this.size += entry.token.length + LOGPROB_OVERHEAD_CHARS;
        for (const top of entry.top_logprobs) this.size += top.token.length + LOGPROB_OVERHEAD_CHARS;
      }
    }
    if (this.size > this.maxChars) return false;
    (this.parts[choice] ??= []).push(content);
    if (logprobs !== undefined) ((this.logprobs ??= [])[choice] ??= []).push(...logprobs);
    return true;
  }

  addToolCall(piece: ToolCallMessage): boolean {
    this.size += piece.arguments.length + (piece.id?.length ?? 0) + (piece.name?.length ?? 0);
    if (this.size > this.maxChars) return false;
    const calls = ((this.calls ??= [])[piece.choice] ??= []);
    // A piece of a call whose first piece never came still keeps its arguments, under an id of our own.
    const call = (calls[piece.index] ??= {
      id: `call_${this.requestId}_${piece.choice}_${piece.index}`,
      name: '',
      arguments: [],
    });
    if (piece.id !== undefined) call.id = piece.id;
    if (piece.name !== undefined) call.name = piece.name;
    call.arguments.push(piece.arguments);
    return true;
  }

  /** The error that ends a request whose answer outgrew the bound (a 502: the backend misbehaved). */
  tooLarge(): GatewayError {
    return GatewayError.workerFailed(
      `The model's answer exceeded the ${this.maxChars} characters a non-streaming response may hold; use stream=true or a lower max_completion_tokens.`,
    );
  }

  finish(done: ChatDoneMessage): ChatCompletion {
    return {
      id: completionIdFor(this.requestId),
      object: 'chat.completion',
      created: this.created,
      model: this.model,
      system_fingerprint: systemFingerprintFor(this.model),
      choices: done.finishReasons.map((reason, index) => ({
        index,
        message: this.messageOf(index),
        logprobs: this.logprobsOf(index),
        finish_reason: reason,
      })),
      usage: toCompletionUsage(done.usage),
    };
  }

  private messageOf(choice: number): ChatCompletionMessage {
    const text = this.parts[choice];
    const calls = this.calls?.[choice];
    if (calls === undefined) return { role: 'assistant', content: (text ?? []).join('') };
    const toolCalls: ToolCall[] = [];
    for (const call of calls) {
      // Indexes a backend skipped leave holes, which for…of visits as undefined.
      if (call === undefined) continue;
      toolCalls.push({
        id: call.id,
        type: 'function',
        function: { name: call.name, arguments: call.arguments.join('') },
      });
    }
    // OpenAI's shape: `content` is null when the model only called tools.
    return { role: 'assistant', content: text === undefined ? null : text.join(''), tool_calls: toolCalls };
  }

  private logprobsOf(choice: number): ChoiceLogprobs | null {
    const content = this.logprobs?.[choice];
    return content === undefined ? null : { content, refusal: null };
  }
}
