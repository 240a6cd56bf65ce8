import { setImmediate as nextTurn } from 'node:timers/promises';
import { encode, encodeChat } from 'gpt-tokenizer';
import type { ChatMessageContent } from '@mgw/contracts';
import type { ChatInferenceRequest, ResponseFormat, ToolDefinition } from '../chat-backend.interface';
import { BoundedCache } from './bounded-cache';

/**
 * User text is counted as text: without this, a prompt that merely mentions `<|endoftext|>` would make
 * the tokenizer throw and fail the request.
 */
export const TOKENIZER_OPTIONS = { disallowedSpecial: new Set<string>() };
/** o200k_base is what the default export of gpt-tokenizer encodes; gpt-4o's chat format matches it. */
const CHAT_FORMAT_MODEL = 'gpt-4o';
/** OpenAI's flat cost of a low-detail image; we never fetch the image to do better. */
export const IMAGE_PART_TOKENS = 85;

/**
 * Tokenising is most of a simulated request's CPU (gpt-tokenizer even builds a special-token regex per
 * call), and clients repeat prompts. Counts are pure functions of the text, so they are remembered within
 * bounds: entries, and the length of text worth a key.
 */
export const TOKENIZER_CACHE_LIMITS = { entries: 1024, maxKeyLength: 4096 } as const;
const textTokenCache = new BoundedCache<number>(
  TOKENIZER_CACHE_LIMITS.entries,
  TOKENIZER_CACHE_LIMITS.maxKeyLength,
);
const promptTokenCache = new BoundedCache<number>(
  TOKENIZER_CACHE_LIMITS.entries,
  TOKENIZER_CACHE_LIMITS.maxKeyLength,
);
/** Agents send the same tool definitions with every turn of a loop. */
const definitionTokenCache = new BoundedCache<number>(
  TOKENIZER_CACHE_LIMITS.entries,
  TOKENIZER_CACHE_LIMITS.maxKeyLength,
);

/**
 * gpt-tokenizer's BPE is quadratic in the length of one pre-token, and a run without spaces is one
 * pre-token: longer texts are counted in pieces of at most this many characters, cut at whitespace where
 * there is some. Shorter texts (nearly every message) are counted whole, exactly.
 */
export const TOKENIZER_CHUNK_CHARS = 2048;
/** What OpenAI adds per tool definition beyond its text, approximately. */
export const TOOL_DEFINITION_OVERHEAD_TOKENS = 8;
/** What OpenAI adds per call in an assistant message beyond its name and arguments, approximately. */
export const TOOL_CALL_OVERHEAD_TOKENS = 3;

/** Every message costs the same frame whatever its role (each role name is one token). */
const MESSAGE_OVERHEAD_TOKENS =
  encodeChat([{ role: 'user', content: '' }], CHAT_FORMAT_MODEL, TOKENIZER_OPTIONS).length -
  encodeChat([], CHAT_FORMAT_MODEL, TOKENIZER_OPTIONS).length;
/** The primer of the assistant's reply. */
const REPLY_PRIMER_TOKENS = encodeChat([], CHAT_FORMAT_MODEL, TOKENIZER_OPTIONS).length;

export function textOf(content: ChatMessageContent | null): string {
  if (content === null) return '';
  if (typeof content === 'string') return content;
  return content.map((part) => (part.type === 'text' ? part.text : '')).join('');
}

export function countTextTokens(text: string): number {
  return textTokenCache.getOrCompute(text, () => encodedLength(text));
}

/** Token count of `text`, in bounded pieces when it is long (see TOKENIZER_CHUNK_CHARS). */
function encodedLength(text: string): number {
  if (text.length <= TOKENIZER_CHUNK_CHARS) return encode(text, TOKENIZER_OPTIONS).length;
  let count = 0;
  for (let start = 0; start < text.length;) {
    const end = pieceEnd(text, start);
    count += encode(text.slice(start, end), TOKENIZER_OPTIONS).length;
    start = end;
  }
  return count;
}

/**
 * Where the piece of `text` that begins at `start` ends: at most TOKENIZER_CHUNK_CHARS on, before the
 * last whitespace of that window, where the tokenizer's own pre-tokens begin.
 */
export function pieceEnd(text: string, start: number): number {
  let end = Math.min(text.length, start + TOKENIZER_CHUNK_CHARS);
  if (end < text.length) {
    const space = text.slice(start, end).search(/\s\S*$/);
    if (space > 0) end = start + space;
    // Never between the two halves of a surrogate pair.
    else if (/[\uD800-\uDBFF]/.test(text.charAt(end - 1))) end--;
  }
  return end;
}

/**
 * How long tokenising may hold the event loop before it hands it back: other streams on the worker, its
 * heartbeat and its job lease all wait while it runs. One piece (TOKENIZER_CHUNK_CHARS) takes a few
 * milliseconds at worst, so a turn lasts about this long.
 */
export const TOKENIZER_SLICE_MS = 10;
/** Texts and prompts up to this many characters are counted at once: a few pieces, about a slice at worst. */
export const TOKENIZER_SYNC_CHARS = 4 * TOKENIZER_CHUNK_CHARS;

/** Work done in slices of about TOKENIZER_SLICE_MS, the event loop handed back between them. */
export class TimeSlicer {
  private sliceStart = performance.now();

  constructor(private readonly signal?: AbortSignal) {}

  /** Hands the event loop back if the current slice is used up; throws the abort reason once aborted. */
  async checkpoint(): Promise<void> {
    if (performance.now() - this.sliceStart < TOKENIZER_SLICE_MS) return;
    await nextTurn();
    this.signal?.throwIfAborted();
    this.sliceStart = performance.now();
  }
}

/** `countTextTokens` that hands the event loop back between pieces of a long text. */
export async function countTextTokensInSlices(text: string, slicer: TimeSlicer): Promise<number> {
  if (text.length <= TOKENIZER_SYNC_CHARS) return countTextTokens(text);
  let count = 0;
  for (let start = 0; start < text.length;) {
    const end = pieceEnd(text, start);
    count += encode(text.slice(start, end), TOKENIZER_OPTIONS).length;
    start = end;
    await slicer.checkpoint();
  }
  return count;
}

/** The parts of a request that are sent to the model as prompt. */
export type PromptParts = Pick<ChatInferenceRequest, 'messages'> &
  Partial<Pick<ChatInferenceRequest, 'tools' | 'responseFormat'>>;

/**
 * Prompt tokens as OpenAI would bill them, an estimate for backends whose model has no tokenizer at hand:
 * - the ChatML-formatted conversation (4 tokens per message around its text, 3 for the primer of the
 *   assistant's reply), 'developer' counted as 'system', which it replaces; a flat 85 per image part;
 * - an assistant message's tool calls: each call's name and arguments plus 3;
 * - tool definitions, which OpenAI renders into a hidden system message: the tokens of a compact rendering
 *   (`// description` and `type name = (_: <parameters as JSON>) => any;` in a `namespace functions`)
 *   plus 8 per tool, as one more message;
 * - a `json_schema` response format: its name, description and schema as JSON, as one more message.
 */
export function countPromptTokens(request: PromptParts): number {
  const messages = promptTokenCache.getOrCompute(JSON.stringify(request.messages), () =>
    sumTokens(messageTexts(request.messages)),
  );
  const tools = request.tools ?? [];
  const format = request.responseFormat;
  if (tools.length === 0 && format?.type !== 'json_schema') return messages;
  const key = JSON.stringify([tools, format]);
  return messages + definitionTokenCache.getOrCompute(key, () => sumTokens(definitionTexts(tools, format)));
}

/**
 * `countPromptTokens` for a prompt of any size: a long one is counted piece by piece, the event loop handed
 * back between slices; a short one (nearly every request) is counted at once, exactly as there.
 */
export async function countPromptTokensInSlices(request: PromptParts, slicer: TimeSlicer): Promise<number> {
  if (promptChars(request) <= TOKENIZER_SYNC_CHARS) return countPromptTokens(request);
  const tools = request.tools ?? [];
  const parts = [messageTexts(request.messages), definitionTexts(tools, request.responseFormat)];
  let total = 0;
  for (const { fixed, texts } of parts) {
    total += fixed;
    for (const text of texts) total += await countTextTokensInSlices(text, slicer);
  }
  return total;
}

/** The characters of a prompt's texts, without copying any; tool definitions by a rough JSON size. */
function promptChars(request: PromptParts): number {
  let chars = 0;
  for (const message of request.messages) {
    const content = message.content;
    if (typeof content === 'string') chars += content.length;
    else if (content !== null)
      for (const part of content) if (part.type === 'text') chars += part.text.length;
    if (message.role === 'assistant' && message.toolCalls !== undefined) {
      for (const call of message.toolCalls) chars += call.function.arguments.length;
    }
  }
  if ((request.tools ?? []).length > 0 || request.responseFormat?.type === 'json_schema') {
    chars += JSON.stringify([request.tools, request.responseFormat]).length;
  }
  return chars;
}

/** A prompt's cost as a fixed number of tokens plus the tokens of some texts. */
interface PromptTexts {
  fixed: number;
  texts: string[];
}

const sumTokens = ({ fixed, texts }: PromptTexts): number =>
  texts.reduce((total, text) => total + countTextTokens(text), fixed);

function messageTexts(messages: ChatInferenceRequest['messages']): PromptTexts {
  let fixed = REPLY_PRIMER_TOKENS;
  const texts: string[] = [];
  for (const message of messages) {
    fixed += MESSAGE_OVERHEAD_TOKENS;
    texts.push(textOf(message.content));
    if (Array.isArray(message.content)) {
      fixed += IMAGE_PART_TOKENS * message.content.filter((part) => part.type === 'image_url').length;
    }
    if ('name' in message && message.name !== undefined) texts.push(message.name);
    if (message.role === 'assistant' && message.toolCalls !== undefined) {
      for (const call of message.toolCalls) {
        fixed += TOOL_CALL_OVERHEAD_TOKENS;
        texts.push(call.function.name, call.function.arguments);
      }
    }
  }
  return { fixed, texts };
}

function definitionTexts(tools: readonly ToolDefinition[], format: ResponseFormat | undefined): PromptTexts {
  let fixed = 0;
  const texts: string[] = [];
  if (tools.length > 0) {
    fixed += MESSAGE_OVERHEAD_TOKENS + TOOL_DEFINITION_OVERHEAD_TOKENS * tools.length;
    texts.push(renderTools(tools));
  }
  if (format?.type === 'json_schema') {
    fixed += MESSAGE_OVERHEAD_TOKENS;
    texts.push(`${format.name}\n${format.description ?? ''}\n${JSON.stringify(format.schema)}`);
  }
  return { fixed, texts };
}

/** Close to the TypeScript-like form OpenAI shows its models, without rendering every keyword. */
export function renderTools(tools: readonly ToolDefinition[]): string {
  const lines = ['# Tools', '', '## functions', '', 'namespace functions {', ''];
  for (const tool of tools) {
    if (tool.description !== undefined) lines.push(`// ${tool.description}`);
    lines.push(`type ${tool.name} = (_: ${JSON.stringify(tool.parameters)}) => any;`, '');
  }
  lines.push('} // namespace functions');
  return lines.join('\n');
}
