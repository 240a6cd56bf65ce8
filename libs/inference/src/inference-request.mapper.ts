import {
  IMAGE_LIMITS,
  parseImageSize,
  type ChatCompletionRequestDto,
  type ChatMessageDto,
  type ImageGenerationRequestDto,
  type ResponseFormatDto,
  type ToolChoiceOption,
  type ToolDto,
} from '@mgw/contracts';
import type {
  ChatInferenceRequest,
  InferenceMessage,
  ResponseFormat,
  ToolChoice,
  ToolDefinition,
} from './chat-backend.interface';
import type { ImageInferenceRequest } from './image-backend.interface';

/** Parameters a backend may relay upstream verbatim; the gateway admits them per model. */
const RELAYED_PARAMETERS = ['logit_bias', 'reasoning_effort', 'verbosity', 'prediction'] as const;

/** What a function without `parameters` takes: OpenAI documents it as "an empty parameter list". */
const NO_PARAMETERS = { type: 'object', properties: {} };
/** A `json_schema` format without a schema asks for a JSON object, as `json_object` does. */
const ANY_OBJECT = { type: 'object' };

function toInferenceMessage(message: ChatMessageDto): InferenceMessage {
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
      // The DTO's checks across fields guarantee content and tool_call_id on a tool message.
      return { role, content: content!, toolCallId: message.tool_call_id! };
    default:
      return { role, content: content!, ...named };
  }
}

function toToolDefinition({ function: fn }: ToolDto): ToolDefinition {
  return {
    name: fn.name,
    ...(typeof fn.description === 'string' && { description: fn.description }),
    parameters: fn.parameters ?? NO_PARAMETERS,
    strict: fn.strict ?? false,
  };
}

function toToolChoice(choice: ToolChoiceOption | undefined | null, hasTools: boolean): ToolChoice {
  if (choice == null) return { type: hasTools ? 'auto' : 'none' };
  if (typeof choice === 'string') return { type: choice };
  return { type: 'function', name: choice.function.name };
}

function toResponseFormat(format: ResponseFormatDto | undefined | null): ResponseFormat {
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

function relayedParametersOf(dto: ChatCompletionRequestDto): Record<string, unknown> | undefined {
  let relayed: Record<string, unknown> | undefined;
  for (const key of RELAYED_PARAMETERS) {
    const value = dto[key];
    if (value != null) (relayed ??= {})[key] = value;
  }
  return relayed;
}

/** Applies OpenAI's defaults (spec: temperature 1, top_p 1, n 1, penalties 0; no tools, text, no logprobs). */
export function toChatInferenceRequest(dto: ChatCompletionRequestDto): ChatInferenceRequest {
  const tools = dto.tools == null ? [] : dto.tools.map(toToolDefinition);
  const logprobs = dto.logprobs === true;
  const relayedParameters = relayedParametersOf(dto);
  return {
    messages: dto.messages.map(toInferenceMessage),
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
    toolChoice: toToolChoice(dto.tool_choice, tools.length > 0),
    parallelToolCalls: dto.parallel_tool_calls ?? true,
    responseFormat: toResponseFormat(dto.response_format),
    logprobs,
    topLogprobs: logprobs ? (dto.top_logprobs ?? 0) : 0,
    ...(relayedParameters && { relayedParameters }),
    ...(typeof dto.prompt_cache_key === 'string' && { promptCacheKey: dto.prompt_cache_key }),
  };
}

export function toImageInferenceRequest(dto: ImageGenerationRequestDto): ImageInferenceRequest {
  const { width, height } = parseImageSize(dto.size ?? IMAGE_LIMITS.size.default);
  return { prompt: dto.prompt, n: dto.n ?? IMAGE_LIMITS.n.default, width, height, user: dto.user ?? null };
}
