import { ChatCompletionRequestDto, GatewayError, validateDto, type RequestSizeLimits } from '@mgw/contracts';
import type {
  ConversationItem,
  FunctionTool,
  InputContentPart,
  ResponsesRequest,
  ResponseToolChoice,
  TextFormat,
} from './responses.types';

type ChatPart =
  { type: 'text'; text: string } | { type: 'image_url'; image_url: { url: string; detail?: string } };
interface ChatMessage {
  role: 'system' | 'user' | 'assistant' | 'tool';
  content: string | ChatPart[] | null;
  tool_calls?: Array<{ id: string; type: 'function'; function: { name: string; arguments: string } }>;
  tool_call_id?: string;
}

function textOf(content: string | InputContentPart[]): string {
  if (typeof content === 'string') return content;
  let text = '';
  for (const part of content) {
    if (part.type === 'input_text' || part.type === 'output_text') text += part.text;
    else if (part.type === 'refusal') text += part.refusal;
  }
  return text;
}

function partsOf(content: string | InputContentPart[]): string | ChatPart[] {
  if (typeof content === 'string') return content;
  if (!content.some((part) => part.type === 'input_image')) return textOf(content);
  return content.map((part): ChatPart => {
    switch (part.type) {
      case 'input_image':
        return {
          type: 'image_url',
          image_url: { url: part.image_url ?? '', ...(part.detail !== undefined && { detail: part.detail }) },
        };
      case 'refusal':
        return { type: 'text', text: part.refusal };
      default:
        return { type: 'text', text: part.text };
    }
  });
}

/**
 * The conversation as chat messages: `developer` speaks as `system`, consecutive `function_call` items
 * become one assistant message's `tool_calls` (joined to the assistant text before them), each
 * `function_call_output` a `tool` message. As OpenAI does, a call without its output and an output for a
 * call never made are refused.
 */
export function toChatMessages(
  instructions: string | null,
  items: readonly ConversationItem[],
  origins?: number[],
): ChatMessage[] {
  const messages: ChatMessage[] = [];
  if (instructions !== null && instructions !== '') messages.push({ role: 'system', content: instructions });
  const calls = new Set<string>();
  const answered = new Set<string>();
  for (let at = 0; at < items.length; at++) {
    const item = items[at]!;
    switch (item.type) {
      case 'message': {
        const role = item.role === 'developer' ? 'system' : item.role;
        const content = role === 'user' ? partsOf(item.content) : textOf(item.content);
        // Where each chat message with content parts came from, to name its parts (`responsesPartName`).
        if (origins !== undefined) origins[messages.length] = at;
        messages.push({ role, content });
        break;
      }
      case 'function_call': {
        calls.add(item.call_id);
        const call = {
          id: item.call_id,
          type: 'function' as const,
          function: { name: item.name, arguments: item.arguments },
        };
        const last = messages.at(-1);
        if (last?.role === 'assistant') (last.tool_calls ??= []).push(call);
        else messages.push({ role: 'assistant', content: null, tool_calls: [call] });
        break;
      }
      case 'function_call_output':
        if (!calls.has(item.call_id)) {
          throw GatewayError.invalidRequest(
            `No tool call found for function call output with call_id ${item.call_id}.`,
            'input',
          );
        }
        answered.add(item.call_id);
        messages.push({ role: 'tool', tool_call_id: item.call_id, content: textOf(item.output) });
        break;
    }
  }
  for (const call of calls) {
    if (!answered.has(call)) {
      throw GatewayError.invalidRequest(`No tool output found for function call ${call}.`, 'input');
    }
  }
  return messages;
}

/** Draft-07 and later schemas name their dialect; a model needs only the schema itself. */
function withoutDialect(
  schema: Record<string, unknown> | null | undefined,
): Record<string, unknown> | undefined {
  if (schema === null || schema === undefined) return undefined;
  if (!('$schema' in schema)) return schema;
  const { $schema: _dialect, ...rest } = schema;
  return rest;
}

function chatTool(tool: FunctionTool): unknown {
  const parameters = withoutDialect(tool.parameters);
  return {
    type: 'function',
    function: {
      name: tool.name,
      ...(tool.description !== undefined && tool.description !== null && { description: tool.description }),
      ...(parameters !== undefined && { parameters }),
      ...(tool.strict !== undefined && tool.strict !== null && { strict: tool.strict }),
    },
  };
}

function chatToolChoice(choice: ResponseToolChoice): unknown {
  if (typeof choice === 'string') return choice;
  if (choice.type === 'function' && typeof choice.name === 'string') {
    return { type: 'function', function: { name: choice.name } };
  }
  // A hosted tool or an allowed-tools list: the model chooses among the tools it sees.
  return 'auto';
}

function responseFormat(format: TextFormat): unknown {
  switch (format.type) {
    case 'text':
      return undefined;
    case 'json_object':
      return { type: 'json_object' };
    case 'json_schema': {
      const { name, schema, description, strict } = format;
      return {
        type: 'json_schema',
        json_schema: {
          name,
          schema: withoutDialect(schema),
          ...(description !== undefined && { description }),
          ...(strict !== undefined && strict !== null && { strict }),
        },
      };
    }
  }
}

/**
 * Chat names of the body's fields, and their Responses names, for the chat request's refusals. Without the
 * request (a stream's failure, rendered again on a resume from its replies alone), a tool is named only as
 * `tools`: its chat index is not its place among the request's tools once hosted ones are left out.
 */
function responsesParam(chatParam: string, request: ResponsesRequest | null): string {
  const tool = /^tools\[(\d+)\](?:\.function)?(.*)$/.exec(chatParam);
  if (tool !== null) {
    const from = request?.tools[Number(tool[1])];
    return from === undefined ? 'tools' : `${from.param}${tool[2] ?? ''}`;
  }
  if (chatParam.startsWith('messages')) return 'input';
  if (chatParam.startsWith('response_format')) {
    return chatParam.replace(/^response_format(\.json_schema)?/, 'text.format');
  }
  if (chatParam === 'max_completion_tokens') return 'max_output_tokens';
  return chatParam;
}

/**
 * A refusal that names a field of the chat request, renamed to the Responses field it came from: the chat
 * request's rules here and a backend's refusals in the worker (a text-only model's image part) alike.
 */
export function inResponsesWords(error: GatewayError, request: ResponsesRequest | null = null): GatewayError {
  if (error.param === null || error.status !== 400) return error;
  const param = responsesParam(error.param, request);
  if (param === error.param) return error;
  const message = error.message.split(error.param).join(param);
  return new GatewayError(error.status, error.type, error.code, message, param, error.headers);
}

/** What a request's session threw, its refusals in the Responses request's words. */
export function asResponsesError(error: unknown, request: ResponsesRequest): unknown {
  return error instanceof GatewayError ? inResponsesWords(error, request) : error;
}

/**
 * A Responses request as the internal chat job request: its conversation (instructions, the stored turns
 * of `previous_response_id`, its own input with references resolved) as chat messages, its function tools
 * and text format in chat's shape. The chat request's own rules (bounds, schemas, sizes) are checked here
 * once more, and their refusals name the Responses field.
 */
export function toChatRequest(
  request: ResponsesRequest,
  conversation: readonly ConversationItem[],
  limits: Readonly<RequestSizeLimits>,
  origins?: number[],
): ChatCompletionRequestDto {
  const format = responseFormat(request.textFormat);
  // Set field by field: this is on every request's path, and conditional spreads take V8's slow path.
  const chat: Record<string, unknown> = {
    messages: toChatMessages(request.instructions, conversation, origins),
  };
  if (request.model !== undefined) chat.model = request.model;
  if (request.tools.length > 0) {
    chat.tools = request.tools.map(({ tool }) => chatTool(tool));
    chat.tool_choice = chatToolChoice(request.toolChoice);
    chat.parallel_tool_calls = request.parallelToolCalls;
  }
  if (format !== undefined) chat.response_format = format;
  if (request.temperature !== null) chat.temperature = request.temperature;
  if (request.topP !== null) chat.top_p = request.topP;
  if (request.maxOutputTokens !== null) chat.max_completion_tokens = request.maxOutputTokens;
  const { user, safety_identifier, prompt_cache_key } = request.passThrough;
  if (user !== undefined) chat.user = user;
  if (safety_identifier !== undefined) chat.safety_identifier = safety_identifier;
  if (prompt_cache_key !== undefined) chat.prompt_cache_key = prompt_cache_key;
  if ((chat.messages as unknown[]).length === 0) {
    throw GatewayError.invalidRequest(
      "Invalid 'input': the conversation has no message for the model.",
      'input',
    );
  }
  let validated: ChatCompletionRequestDto;
  try {
    validated = validateDto(ChatCompletionRequestDto, chat, limits);
  } catch (error) {
    throw asResponsesError(error, request);
  }
  if (request.textFormat.type === 'json_schema') {
    const problem = schemaTypeProblem(request.textFormat.schema);
    if (problem !== null) {
      throw GatewayError.invalidRequest(
        `Invalid schema for response_format '${request.textFormat.name}': ${problem}`,
        'text.format.schema',
        'invalid_json_schema',
      );
    }
  }
  return validated;
}

const JSON_TYPES: ReadonlySet<unknown> = new Set([
  'object',
  'array',
  'string',
  'number',
  'integer',
  'boolean',
  'null',
]);

/**
 * A `type` keyword that names no JSON type, anywhere in a schema (already bounded in size and depth by the
 * chat request's rules): a schema no model output could be checked against.
 */
function schemaTypeProblem(schema: Record<string, unknown>): string | null {
  const stack: unknown[] = [schema];
  while (stack.length > 0) {
    const node = stack.pop();
    if (typeof node !== 'object' || node === null) continue;
    if (Array.isArray(node)) {
      stack.push(...(node as unknown[]));
      continue;
    }
    for (const [key, value] of Object.entries(node)) {
      if (key === 'type' && (typeof value === 'string' || Array.isArray(value))) {
        const types = Array.isArray(value) ? (value as unknown[]) : [value];
        const bad = types.find((type) => !JSON_TYPES.has(type));
        if (bad !== undefined) return `${JSON.stringify(bad)} is not a JSON Schema type.`;
      } else if (typeof value === 'object' && value !== null) {
        stack.push(value);
      }
    }
  }
  return null;
}
