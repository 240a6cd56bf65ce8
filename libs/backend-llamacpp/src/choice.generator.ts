import { randomBytes } from 'node:crypto';
import type { Token } from 'node-llama-cpp';
import type { FinishReason, TokenLogprob, TopLogprob } from '@mgw/contracts';
import { type ChatInferenceEvent, StopSequenceMatcher } from '@mgw/inference';
import type { EventChannel } from './event.channel';
import type {
  EvaluateOptions,
  FunctionCallSyntax,
  GeneratedToken,
  LlamaSequence,
  LoadedLlamaModel,
  ModelGrammar,
} from './loaded-model';
import { TokenTextDecoder } from './token-text.decoder';

/** OpenAI's floor for a token the sampler gave no probability (e.g. one greedy decoding did not consider). */
const MIN_LOGPROB = -9999;

/** The functions a turn may call, prepared once per request. */
export interface PreparedTools {
  /** `forced`: the turn is a call (tool_choice required or a named function); `auto`: the model decides. */
  mode: 'auto' | 'forced';
  /** Functions a call may name. */
  names: readonly string[];
  /** Each function's argument grammar (JSON valid against its parameters). */
  argumentGrammars: ReadonlyMap<string, ModelGrammar>;
  syntax: FunctionCallSyntax;
}

/** What every choice of one request shares. */
export interface PreparedPrompt {
  tokens: Token[];
  /** The user's stop sequences plus the chat template's end-of-turn texts. */
  stopTexts: string[];
  /** End-of-turn markers of the template that are special tokens rather than text. */
  stopTokenSequences: Token[][];
  /** Most tokens a choice may generate (max_tokens), null = as many as the context holds. */
  maxTokens: number | null;
  contextSize: number;
  /** Constrains a text answer (response_format json_object / json_schema). */
  answerGrammar: ModelGrammar | null;
  tools: PreparedTools | null;
  /** Alternatives reported per token; null = no logprobs. */
  topLogprobs: number | null;
}

/** Where a call starts: the tokens still to append to the sequence, and the part of its name already written. */
interface CallStart {
  pending: Token[];
  nameStart: string;
}

function endsWith(tokens: readonly Token[], suffix: readonly Token[]): boolean {
  if (suffix.length === 0 || suffix.length > tokens.length) return false;
  const offset = tokens.length - suffix.length;
  return suffix.every((token, i) => tokens[offset + i] === token);
}

const newCallId = () => `call_${randomBytes(12).toString('base64url')}`;

/**
 * Generates one choice on a sequence of its own, as a state machine of phases that share the sequence:
 * text (the answer, free or grammar-constrained), then, when the model opens a function call or the
 * request forces one, the function's name (a grammar over the allowed names, unless only one fits) and
 * its arguments (the function's JSON-schema grammar). Nothing is executed: the call is reported and the
 * choice finishes with `tool_calls`. One call per turn.
 */
export class ChoiceGenerator {
  /** Tokens the model sampled (the completion tokens of usage). */
  private readonly generated: Token[] = [];
  /** Tokens the backend wrote into the model's turn (a forced call's prefix, name, params prefix). */
  private injected = 0;

  constructor(
    private readonly model: LoadedLlamaModel,
    private readonly sequence: LlamaSequence,
    private readonly prompt: PreparedPrompt,
    /** Leading prompt tokens the sequence already holds from an earlier generation (not evaluated again). */
    private readonly cached: number,
    private readonly choice: number,
    private readonly sampling: (generated: Token[]) => EvaluateOptions,
    private readonly stop: AbortSignal,
    private readonly channel: EventChannel<ChatInferenceEvent>,
  ) {}

  get completionTokens(): number {
    return this.generated.length;
  }

  /** Runs the choice to its finish event; throws the abort reason when stopped. */
  async run(): Promise<void> {
    const tools = this.prompt.tools;
    let reason: FinishReason;
    if (tools?.mode === 'forced') {
      this.injected += tools.syntax.prefix.length;
      reason = await this.call(tools, {
        pending: [...this.prompt.tokens.slice(this.cached), ...tools.syntax.prefix],
        nameStart: '',
      });
    } else {
      const text = await this.text(tools);
      reason = text.call === null || tools === null ? text.reason : await this.call(tools, text.call);
    }
    this.stop.throwIfAborted();
    this.channel.push({ type: 'finish', choice: this.choice, reason });
  }

  private get full(): boolean {
    const { maxTokens, contextSize, tokens } = this.prompt;
    return (
      (maxTokens !== null && this.generated.length >= maxTokens) ||
      tokens.length + this.injected + this.generated.length >= contextSize
    );
  }

  /** The text phase: the answer, until it ends, a stop sequence, the limit, or the opening of a call. */
  private async text(tools: PreparedTools | null): Promise<{ reason: FinishReason; call: CallStart | null }> {
    const { prompt, choice, channel } = this;
    const triggers = tools?.syntax.triggerTexts ?? [];
    const decoder = new TokenTextDecoder<Token>((tokens, context) => this.model.detokenize(tokens, context));
    const matcher = new StopSequenceMatcher([...prompt.stopTexts, ...triggers]);
    /**
     * Everything decoded (only kept when a call can be opened), and how much of it was sent: a call
     * trigger is found where sending stopped.
     */
    let decoded = '';
    let sent = 0;
    let logprobs: TokenLogprob[] = [];
    const send = (text: string): void => {
      if (text.length === 0) return;
      sent += text.length;
      channel.push({ type: 'delta', choice, text, ...(prompt.topLogprobs !== null ? { logprobs } : {}) });
      logprobs = [];
    };
    let reason: FinishReason = 'stop';
    const options = { ...this.sampling(this.generated), probabilities: prompt.topLogprobs !== null };
    if (prompt.answerGrammar !== null) options.grammar = prompt.answerGrammar;
    for await (const output of this.sequence.evaluate(prompt.tokens.slice(this.cached), options)) {
      if (this.stop.aborted) break;
      const { token } = output;
      this.generated.push(token);
      if (prompt.stopTokenSequences.some((suffix) => endsWith(this.generated, suffix))) break;
      const opened = tools?.syntax.triggerTokens.find((trigger) => trigger.token === token);
      if (opened !== undefined) {
        this.injected += opened.rest.length;
        return { reason: 'tool_calls', call: { pending: [token, ...opened.rest], nameStart: '' } };
      }
      if (prompt.topLogprobs !== null) logprobs.push(this.logprobOf(output, prompt.topLogprobs));
      const piece = decoder.push(token);
      if (triggers.length > 0) decoded += piece;
      const { emit, stopped } = matcher.push(piece);
      send(emit);
      if (stopped) {
        const trigger = triggers.find((text) => decoded.startsWith(text, sent));
        if (trigger === undefined) return { reason: 'stop', call: null };
        // The token that completed the trigger is not in the sequence yet; what follows the trigger in
        // the text is the start of the function's name.
        const nameStart = decoded.slice(sent + trigger.length).trimStart();
        return { reason: 'tool_calls', call: { pending: [token], nameStart } };
      }
      if (this.full) {
        reason = 'length';
        break;
      }
    }
    this.stop.throwIfAborted();
    if (!matcher.isStopped) {
      // Bytes held for an unfinished character, then text held as a possible start of a stop sequence.
      send(matcher.push(decoder.flush()).emit);
      if (matcher.isStopped) reason = 'stop';
      else send(matcher.flush());
    }
    return { reason, call: null };
  }

  /** The call phases: the function's name, then its arguments, streamed as they are generated. */
  private async call(tools: PreparedTools, start: CallStart): Promise<FinishReason> {
    const candidates = tools.names.filter((name) => name.startsWith(start.nameStart));
    // The model named a function it was not offered: its turn ends there.
    if (candidates.length === 0) return 'stop';
    let pending = start.pending;
    let name: string;
    if (candidates.length === 1) {
      name = candidates[0]!;
      const rest = this.model.tokenize(name.slice(start.nameStart.length));
      this.injected += rest.length;
      pending = [...pending, ...rest];
    } else {
      const grammar = await this.model.choiceGrammar(candidates.map((c) => c.slice(start.nameStart.length)));
      const decoder = new TokenTextDecoder<Token>((tokens, context) =>
        this.model.detokenize(tokens, context),
      );
      let written = '';
      for await (const { token } of this.sequence.evaluate(pending, {
        ...this.sampling(this.generated),
        grammar,
      })) {
        if (this.stop.aborted) return 'stop';
        this.generated.push(token);
        written += decoder.push(token);
        if (this.full) return 'length';
      }
      name = start.nameStart + written + decoder.flush();
      if (!candidates.includes(name)) throw new Error(`the name grammar produced "${name}"`);
      pending = [];
    }
    this.stop.throwIfAborted();
    this.channel.push({ type: 'tool-call-start', choice: this.choice, index: 0, id: newCallId(), name });

    const paramsPrefix = tools.syntax.paramsPrefix(name);
    this.injected += paramsPrefix.length;
    const decoder = new TokenTextDecoder<Token>((tokens, context) => this.model.detokenize(tokens, context));
    // The JSON grammar lets the model pad the end of the arguments with whitespace; it is held back until
    // more JSON follows, and dropped at the end.
    let whitespace = '';
    const sendArguments = (text: string) => {
      const json = text.trimEnd();
      if (json.length === 0) {
        whitespace += text;
        return;
      }
      this.channel.push({
        type: 'tool-call-arguments',
        choice: this.choice,
        index: 0,
        fragment: whitespace + json,
      });
      whitespace = text.slice(json.length);
    };
    const grammar = tools.argumentGrammars.get(name)!;
    let reason: FinishReason = 'tool_calls';
    for await (const { token } of this.sequence.evaluate([...pending, ...paramsPrefix], {
      ...this.sampling(this.generated),
      grammar,
    })) {
      if (this.stop.aborted) break;
      this.generated.push(token);
      sendArguments(decoder.push(token));
      if (this.full) {
        reason = 'length';
        break;
      }
    }
    this.stop.throwIfAborted();
    sendArguments(decoder.flush());
    return reason;
  }

  private logprobOf({ token, probabilities }: GeneratedToken, top: number): TokenLogprob {
    const entry = (candidate: Token, probability: number | undefined): TopLogprob => {
      const text = this.model.tokenText(candidate);
      return {
        token: text,
        logprob: probability !== undefined && probability > 0 ? Math.log(probability) : MIN_LOGPROB,
        bytes: [...Buffer.from(text, 'utf8')],
      };
    };
    const alternatives: TopLogprob[] = [];
    if (top > 0 && probabilities !== undefined) {
      for (const [candidate, probability] of probabilities) {
        if (alternatives.length >= top) break;
        alternatives.push(entry(candidate, probability));
      }
    }
    return { ...entry(token, probabilities?.get(token)), top_logprobs: alternatives };
  }
}
