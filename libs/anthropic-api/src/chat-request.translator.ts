import { createHash } from 'node:crypto';
import { type ChatContentPart, type ToolCall } from '@mgw/contracts';
import { ParamOrigins, type ChatRequest, type InferenceMessage, type ToolChoice } from '@mgw/request';
import type {
  CountTokensRequest,
  ImageBlock,
  InputMessage,
  MessagesRequest,
  MessagesToolChoice,
  TextBlock,
  ToolResultBlock,
} from './messages.types';

/** OpenAI bounds `user` at 64 characters; a longer id (Claude Code's JSON one) is sent as its digest. */
const USER_MAX_CHARS = 64;

const joinText = (blocks: readonly TextBlock[]): string => blocks.map((block) => block.text).join('\n\n');

const systemText = (system: string | TextBlock[]): string =>
  typeof system === 'string' ? system : joinText(system);

function imagePart(block: ImageBlock): ChatContentPart {
  const source = block.source;
  const url = source.type === 'base64' ? `data:${source.media_type};base64,${source.data}` : source.url;
  return { type: 'image_url', image_url: { url } };
}

/** A tool's result as the text of a tool message; images in it, which tool messages cannot hold, by name. */
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

function assistantMessage(
  content: Extract<InputMessage, { role: 'assistant' }>['content'],
): InferenceMessage {
  if (typeof content === 'string') return { role: 'assistant', content };
  const texts: string[] = [];
  const calls: ToolCall[] = [];
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
  return { role: 'assistant', content: text.length > 0 ? text : null, toolCalls: calls };
}

function toolChoiceOf(choice: MessagesToolChoice | undefined, hasTools: boolean): ToolChoice {
  if (!hasTools) return { type: 'none' };
  switch (choice?.type) {
    case undefined:
    case 'auto':
      return { type: 'auto' };
    case 'any':
      return { type: 'required' };
    case 'none':
      return { type: 'none' };
    case 'tool':
      return { type: 'function', name: choice.name };
  }
}

function userOf(userId: string | null | undefined): string | null {
  if (userId === undefined || userId === null || userId.length === 0) return null;
  if (userId.length <= USER_MAX_CHARS) return userId;
  return createHash('sha256').update(userId).digest('hex');
}

/** The conversation as neutral messages, each named by the Messages field it came from. */
class Conversation {
  readonly messages: InferenceMessage[] = [];

  constructor(readonly origins: ParamOrigins) {}

  add(message: InferenceMessage, param: string): void {
    this.origins.set(`messages[${this.messages.length}]`, param);
    this.messages.push(message);
  }

  /** A user turn: its tool results first (each a tool message), then its other content, as parts. */
  user(content: Extract<InputMessage, { role: 'user' }>['content'], param: string): void {
    if (typeof content === 'string') return this.add({ role: 'user', content }, param);
    const parts: ChatContentPart[] = [];
    const blocks: number[] = [];
    let results = 0;
    content.forEach((block, index) => {
      if (block.type === 'tool_result') {
        this.add({ role: 'tool', toolCallId: block.tool_use_id, content: toolResultText(block) }, param);
        results++;
        return;
      }
      if (block.type === 'text') parts.push({ type: 'text', text: block.text });
      else if (block.type === 'image') parts.push(imagePart(block));
      else return;
      blocks.push(index);
    });
    if (parts.length === 0 && results > 0) return;
    const at = this.messages.length;
    this.add({ role: 'user', content: parts }, param);
    blocks.forEach((block, part) => {
      if (parts[part]!.type === 'image_url') {
        this.origins.set(
          `messages[${at}].content[${part}].image_url.url`,
          `${param}.content.${block}.source.url`,
        );
      }
    });
  }
}

/**
 * A Messages request as the neutral chat request, and where its parts came from: `system` and the system
 * entries of `messages` become one leading system message; `tool_use` blocks become the assistant's tool
 * calls and `tool_result` blocks tool messages; `tools` are functions with `input_schema` as their
 * parameters; `tool_choice` `any` is `required`. What no backend honours (`top_k`, thinking, cache
 * control, `service_tier`, effort) is left out.
 */
export function translateMessagesRequest(request: MessagesRequest | CountTokensRequest): {
  request: ChatRequest;
  origins: ParamOrigins;
} {
  const origins = new ParamOrigins().set('stop', 'stop_sequences').set('max_tokens', 'max_tokens');
  const system: string[] = [];
  if (request.system !== undefined && request.system !== null) system.push(systemText(request.system));
  for (const message of request.messages)
    if (message.role === 'system') system.push(systemText(message.content));
  const conversation = new Conversation(origins);
  const leading = system.filter((text) => text.length > 0).join('\n\n');
  if (leading.length > 0) conversation.add({ role: 'system', content: leading }, 'system');
  request.messages.forEach((message, index) => {
    const param = `messages.${index}`;
    if (message.role === 'user') conversation.user(message.content, param);
    else if (message.role === 'assistant') conversation.add(assistantMessage(message.content), param);
  });
  const tools = (request.tools ?? []).map((tool, index) => {
    origins.set(`tools[${index}].function.parameters`, `tools.${index}.input_schema`);
    origins.set(`tools[${index}]`, `tools.${index}`);
    return {
      name: tool.name,
      ...(tool.description !== undefined && { description: tool.description }),
      parameters: tool.input_schema,
      strict: false,
    };
  });
  const choice = request.tool_choice ?? undefined;
  const serial = choice !== undefined && choice.type !== 'none' && choice.disable_parallel_tool_use === true;
  return {
    request: {
      messages: conversation.messages,
      n: 1,
      maxTokens: 'max_tokens' in request ? request.max_tokens : null,
      stop: request.stop_sequences ?? [],
      temperature: request.temperature ?? 1,
      topP: request.top_p ?? 1,
      presencePenalty: 0,
      frequencyPenalty: 0,
      seed: null,
      user: userOf(request.metadata?.user_id),
      tools,
      toolChoice: toolChoiceOf(choice, tools.length > 0),
      parallelToolCalls: !(tools.length > 0 && serial),
      responseFormat: { type: 'text' },
      logprobs: false,
      topLogprobs: 0,
    },
    origins,
  };
}
