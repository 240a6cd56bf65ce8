import {
  CHAT_LIMITS,
  RELAYED_CHAT_PARAMETERS,
  type ChatCompletionRequest,
  type ChatRequestMessage,
  type ChatResponseFormat,
  type ChatTool,
  type ChatToolChoice,
} from '@mgw/contracts';
import {
  ANY_OBJECT,
  NO_PARAMETERS,
  type ChatRequest,
  type InferenceMessage,
  type ResponseFormat,
  type ToolChoice,
  type ToolDefinition,
} from './chat-request';

/**
 * The two ways between a Chat Completions body and the neutral `ChatRequest`: the Chat Completions
 * front-end makes its request of its validated body (`chatRequestOfBody`), and a job an older worker must
 * read carries its request as such a body (`chatBodyOf`, read back by the first).
 */

function messageOf(message: ChatRequestMessage): InferenceMessage {
  const { role, content, name } = message;
  // `name: null` is valid JSON for "no name"; backends only ever see a string or nothing.
  const named = typeof name === 'string' ? { name } : {};
  switch (role) {
    case 'assistant': {
      // A refused turn echoed back has its refusal as its only text: the model sees what it said.
      const text = content ?? (typeof message.refusal === 'string' ? message.refusal : null);
      const calls = message.tool_calls;
      if (calls == null) return { role, content: text, ...named };
      const toolCalls = calls.map(({ id, function: fn }) => ({
        id,
        type: 'function' as const,
        function: { name: fn.name, arguments: fn.arguments },
      }));
      return { role, content: text, ...named, toolCalls };
    }
    case 'tool':
      // The request's rules guarantee content and tool_call_id on a tool message.
      return { role, content: content!, toolCallId: message.tool_call_id! };
    default:
      return { role, content: content!, ...named };
  }
}

function toolOf({ function: fn }: ChatTool): ToolDefinition {
  return {
    name: fn.name,
    ...(typeof fn.description === 'string' && { description: fn.description }),
    parameters: fn.parameters ?? NO_PARAMETERS,
    strict: fn.strict ?? false,
  };
}

function toolChoiceOf(choice: ChatToolChoice | undefined | null, hasTools: boolean): ToolChoice {
  if (choice == null) return { type: hasTools ? 'auto' : 'none' };
  if (typeof choice === 'string') return { type: choice };
  return { type: 'function', name: choice.function.name };
}

function formatOf(format: ChatResponseFormat | undefined | null): ResponseFormat {
  if (format == null || format.type === 'text') return { type: 'text' };
  if (format.type === 'json_object') return { type: 'json_object' };
  const spec = format.json_schema!;
  return {
    type: 'json_schema',
    name: spec.name,
    schema: spec.schema ?? ANY_OBJECT,
    strict: spec.strict ?? false,
    ...(typeof spec.description === 'string' && { description: spec.description }),
  };
}

function relayedParametersOf(dto: ChatCompletionRequest): Record<string, unknown> | undefined {
  let relayed: Record<string, unknown> | undefined;
  for (const key of RELAYED_CHAT_PARAMETERS) {
    const value = dto[key];
    if (value != null) (relayed ??= {})[key] = value;
  }
  return relayed;
}

/** A validated Chat Completions body as the neutral request, with OpenAI's defaults applied. */
export function chatRequestOfBody(dto: ChatCompletionRequest): ChatRequest {
  const tools = dto.tools == null ? [] : dto.tools.map(toolOf);
  const logprobs = dto.logprobs === true;
  const relayedParameters = relayedParametersOf(dto);
  return {
    messages: dto.messages.map(messageOf),
    n: dto.n ?? 1,
    maxTokens: dto.max_completion_tokens ?? dto.max_tokens ?? null,
    stop:
      dto.stop === undefined || dto.stop === null ? [] : typeof dto.stop === 'string' ? [dto.stop] : dto.stop,
    temperature: dto.temperature ?? 1,
    topP: dto.top_p ?? 1,
    presencePenalty: dto.presence_penalty ?? 0,
    frequencyPenalty: dto.frequency_penalty ?? 0,
    seed: dto.seed ?? null,
    user: dto.user ?? null,
    tools,
    toolChoice: toolChoiceOf(dto.tool_choice, tools.length > 0),
    parallelToolCalls: dto.parallel_tool_calls ?? true,
    responseFormat: formatOf(dto.response_format),
    logprobs,
    topLogprobs: logprobs ? (dto.top_logprobs ?? 0) : 0,
    ...(relayedParameters && { relayedParameters }),
    ...(typeof dto.prompt_cache_key === 'string' && { promptCacheKey: dto.prompt_cache_key }),
  };
}

type PlainBody = Record<string, unknown>;

function bodyMessageOf(message: InferenceMessage): PlainBody {
  const body: PlainBody = { role: message.role, content: message.content };
  if (message.role === 'tool') body.tool_call_id = message.toolCallId;
  else if (message.name !== undefined) body.name = message.name;
  if (message.role === 'assistant' && message.toolCalls !== undefined) body.tool_calls = message.toolCalls;
  return body;
}

function bodyToolOf(tool: ToolDefinition): PlainBody {
  const fn: PlainBody = { name: tool.name };
  if (tool.description !== undefined) fn.description = tool.description;
  if (tool.parameters !== NO_PARAMETERS) fn.parameters = tool.parameters;
  if (tool.strict) fn.strict = true;
  return { type: 'function', function: fn };
}

function bodyFormatOf(format: ResponseFormat): PlainBody {
  if (format.type !== 'json_schema') return { type: format.type };
  const spec: PlainBody = { name: format.name };
  if (format.schema !== ANY_OBJECT) spec.schema = format.schema;
  if (format.strict) spec.strict = true;
  if (format.description !== undefined) spec.description = format.description;
  return { type: 'json_schema', json_schema: spec };
}

/**
 * The request as the Chat Completions body a worker of job version 3 or less reads back into the same
 * request (`chatRequestOfBody`), or null when no such body carries it (more stop sequences than chat's 4:
 * the Messages API takes up to 64), so that its job is written in the neutral shape of version 4. Only
 * what differs from a default is written.
 */
export function chatBodyOf(request: ChatRequest): PlainBody | null {
  if (request.stop.length > CHAT_LIMITS.stop.max) return null;
  const body: PlainBody = { messages: request.messages.map(bodyMessageOf) };
  if (request.n !== 1) body.n = request.n;
  if (request.maxTokens !== null) body.max_tokens = request.maxTokens;
  if (request.stop.length > 0) body.stop = request.stop;
  if (request.temperature !== 1) body.temperature = request.temperature;
  if (request.topP !== 1) body.top_p = request.topP;
  if (request.presencePenalty !== 0) body.presence_penalty = request.presencePenalty;
  if (request.frequencyPenalty !== 0) body.frequency_penalty = request.frequencyPenalty;
  if (request.seed !== null) body.seed = request.seed;
  if (request.user !== null) body.user = request.user;
  if (request.tools.length > 0) {
    body.tools = request.tools.map(bodyToolOf);
    const choice = request.toolChoice;
    if (choice.type !== 'auto') {
      body.tool_choice =
        choice.type === 'function' ? { type: 'function', function: { name: choice.name } } : choice.type;
    }
    if (!request.parallelToolCalls) body.parallel_tool_calls = false;
  }
  if (request.responseFormat.type !== 'text') body.response_format = bodyFormatOf(request.responseFormat);
  if (request.logprobs) {
    body.logprobs = true;
    if (request.topLogprobs > 0) body.top_logprobs = request.topLogprobs;
  }
  if (request.relayedParameters !== undefined) Object.assign(body, request.relayedParameters);
  if (request.promptCacheKey !== undefined) body.prompt_cache_key = request.promptCacheKey;
  return body;
}
