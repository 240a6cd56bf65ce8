import { createHash } from 'node:crypto';
import { GatewayError } from '@mgw/contracts';
import type {
  CountTokensRequest,
  ImageBlock,
  InputMessage,
  MessagesRequest,
  MessagesToolChoice,
  TextBlock,
  ToolResultBlock,
} from './messages.types';

/** A chat completions request as plain JSON, validated next with the chat request's own rules. */
export type PlainChatRequest = Record<string, unknown>;
type PlainMessage = Record<string, unknown>;
type ContentPart = { type: 'text'; text: string } | { type: 'image_url'; image_url: { url: string } };

/** OpenAI bounds `user` at 64 characters; a longer id (Claude Code's JSON one) is sent as its digest. */
const USER_MAX_CHARS = 64;

const joinText = (blocks: readonly TextBlock[]): string => blocks.map((block) => block.text).join('\n\n');

const systemText = (system: string | TextBlock[]): string =>
  typeof system === 'string' ? system : joinText(system);

function imageUrl(block: ImageBlock): ContentPart {
  const source = block.source;
  const url = source.type === 'base64' ? `data:${source.media_type};base64,${source.data}` : source.url;
  return { type: 'image_url', image_url: { url } };
}

/** A tool's result as the text of a chat tool message; images in it, which tool messages cannot hold, by name. */
function toolResultText(block: ToolResultBlock): string {
  const content = block.content;
  const text =
    content === undefined
      ? ''
      : typeof content === 'string'
        ? content
        : content.map((part) => (part.type === 'text' ? part.text : '[image]')).join('\n');
  return block.is_error === true ? `Error: ${text}` : text;
}

/**
 * One user turn: its tool results first (chat answers a call with a `tool` message), then its other content,
 * whose parts' block indices go to `blocks`.
 */
function userMessages(
  content: string | Exclude<InputMessage, { role: 'system' }>['content'],
  blocks: number[],
): PlainMessage[] {
  if (typeof content === 'string') return [{ role: 'user', content }];
  const messages: PlainMessage[] = [];
  const parts: ContentPart[] = [];
  content.forEach((block, index) => {
    if (block.type === 'tool_result') {
      messages.push({ role: 'tool', tool_call_id: block.tool_use_id, content: toolResultText(block) });
      return;
    }
    if (block.type === 'text') parts.push({ type: 'text', text: block.text });
    else if (block.type === 'image') parts.push(imageUrl(block));
    else return;
    blocks.push(index);
  });
  if (parts.length > 0 || messages.length === 0) messages.push({ role: 'user', content: parts });
  return messages;
}

/** One assistant turn: its text and its tool calls; thinking blocks are dropped (no backend reads them). */
function assistantMessage(content: Extract<InputMessage, { role: 'assistant' }>['content']): PlainMessage {
  if (typeof content === 'string') return { role: 'assistant', content };
  const texts: string[] = [];
  const calls: PlainMessage[] = [];
  for (const block of content) {
    if (block.type === 'text') texts.push(block.text);
    else if (block.type === 'tool_use') {
      calls.push({
        id: block.id,
        type: 'function',
        function: { name: block.name, arguments: JSON.stringify(block.input) },
      });
    }
  }
  const text = texts.join('');
  if (calls.length === 0) return { role: 'assistant', content: text };
  return { role: 'assistant', content: text.length > 0 ? text : null, tool_calls: calls };
}

function toolChoiceOf(choice: MessagesToolChoice): unknown {
  switch (choice.type) {
    case 'auto':
      return 'auto';
    case 'any':
      return 'required';
    case 'none':
      return 'none';
    case 'tool':
      return { type: 'function', function: { name: choice.name } };
  }
}

function userOf(userId: string | null | undefined): string | undefined {
  if (userId === undefined || userId === null || userId.length === 0) return undefined;
  if (userId.length <= USER_MAX_CHARS) return userId;
  return createHash('sha256').update(userId).digest('hex');
}

/**
 * A Messages request as the internal job request (the chat completions shape): `system` and the system
 * entries of `messages` become one leading system message; `tool_use` blocks become the assistant's tool
 * calls and `tool_result` blocks tool messages; `tools` become function tools with `input_schema` as their
 * parameters; `tool_choice` `any` is `required`. What no backend honours (`top_k`, thinking, cache
 * control, `service_tier`, effort) is left out.
 */
export function toChatCompletionRequest(request: MessagesRequest | CountTokensRequest): PlainChatRequest {
  return translateMessagesRequest(request).chat;
}

/** The chat request of a Messages request, and the Messages field each of its messages came from. */
export interface TranslatedRequest {
  chat: PlainChatRequest;
  /** By chat message index: `system` (the joined system prompt) or `messages.<i>`. */
  sources: string[];
  /** By chat message index: the block index of each of its content parts (absent: no parts). */
  blocks: Array<readonly number[] | undefined>;
}

/** The Messages name of a chat request's content part (an image's URL, for a refusal of it). */
export function messagesPartName(
  translated: Pick<TranslatedRequest, 'sources' | 'blocks'>,
): (message: number, part: number) => string {
  return (message, part) => {
    const source = translated.sources[message] ?? 'messages';
    const block = translated.blocks[message]?.[part];
    return block === undefined ? source : `${source}.content.${block}.source.url`;
  };
}

/** `toChatCompletionRequest`, keeping where each chat message came from, to name it in a refusal. */
export function translateMessagesRequest(request: MessagesRequest | CountTokensRequest): TranslatedRequest {
  const system: string[] = [];
  if (request.system !== undefined && request.system !== null) system.push(systemText(request.system));
  const messages: PlainMessage[] = [];
  const sources: string[] = [];
  const blocks: Array<readonly number[] | undefined> = [];
  request.messages.forEach((message, index) => {
    if (message.role === 'system') {
      system.push(systemText(message.content));
      return;
    }
    const partBlocks: number[] = [];
    const made =
      message.role === 'user'
        ? userMessages(message.content, partBlocks)
        : [assistantMessage(message.content)];
    messages.push(...made);
    for (let i = 0; i < made.length; i++) {
      sources.push(`messages.${index}`);
      // The content parts, when there are any, are the turn's last message.
      blocks.push(i === made.length - 1 ? partBlocks : undefined);
    }
  });
  const leading = system.filter((text) => text.length > 0).join('\n\n');
  const chat: PlainChatRequest = {
    model: request.model,
    messages: leading.length > 0 ? [{ role: 'system', content: leading }, ...messages] : messages,
  };
  if ('max_tokens' in request) chat.max_tokens = request.max_tokens;
  if ('stream' in request && request.stream === true) chat.stream = true;
  if (request.temperature != null) chat.temperature = request.temperature;
  if (request.top_p != null) chat.top_p = request.top_p;
  if (request.stop_sequences != null && request.stop_sequences.length > 0) chat.stop = request.stop_sequences;
  const user = userOf(request.metadata?.user_id);
  if (user !== undefined) chat.user = user;
  const tools = request.tools ?? [];
  if (tools.length > 0) {
    chat.tools = tools.map((tool) => ({
      type: 'function',
      function: {
        name: tool.name,
        ...(tool.description !== undefined && { description: tool.description }),
        parameters: tool.input_schema,
      },
    }));
    const choice = request.tool_choice;
    if (choice != null) {
      chat.tool_choice = toolChoiceOf(choice);
      if (choice.type !== 'none' && choice.disable_parallel_tool_use === true)
        chat.parallel_tool_calls = false;
    }
  }
  return leading.length > 0
    ? { chat, sources: ['system', ...sources], blocks: [undefined, ...blocks] }
    : { chat, sources, blocks };
}

/**
 * A refusal in the Messages request's words: the chat request's rules and a backend's refusals (a
 * text-only model's image part) name a chat message by its index (`messages[1]`), which the lifted system
 * prompt and split tool results shift; it is named by the Messages field it came from (`messages.0`).
 */
export function inMessagesWords(error: GatewayError, sources: readonly string[]): GatewayError {
  const rename = (text: string) =>
    text.replace(/\bmessages\[(\d+)\]/g, (chat, index: string) => sources[Number(index)] ?? chat);
  const message = rename(error.message);
  if (message === error.message) return error;
  const param = error.param === null ? null : rename(error.param);
  return new GatewayError(error.status, error.type, error.code, message, param, error.headers);
}
