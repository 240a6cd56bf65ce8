import type { ChatMessageContent, ToolCall } from '@mgw/contracts';
import type { ParamOrigins } from './param-origins';

/**
 * The gateway's own chat request: what every chat front-end (Chat Completions, Responses, Messages) makes
 * of its wire body, what the session checks against a model and queues, and what a backend generates
 * from. It is no protocol's body: defaults are applied, `stop` is a list, tools and formats are
 * normalised. Its parts are named, in refusals past the front-end, by neutral paths (`messages[i]`,
 * `messages[i].content[j]`, `tools[i]`, `response_format`, `max_tokens`, …: the spelling workers of every
 * job version use) that the request's `ParamOrigins` turn into the client's own `param`.
 */

/** A JSON Schema as the client sent it (already bounded in size and depth by its front-end). */
export type JsonSchema = Record<string, unknown>;

/** A function the model may call. */
export interface ToolDefinition {
  name: string;
  description?: string;
  /** JSON Schema of the arguments object; `NO_PARAMETERS` when the client sent none. */
  parameters: JsonSchema;
  strict: boolean;
}

/** `tool_choice`, normalised: a named function is `{type: 'function', name}`. */
export type ToolChoice =
  { type: 'none' } | { type: 'auto' } | { type: 'required' } | { type: 'function'; name: string };

/** The output's format, normalised. */
export type ResponseFormat =
  | { type: 'text' }
  | { type: 'json_object' }
  | { type: 'json_schema'; name: string; schema: JsonSchema; strict: boolean; description?: string };

/** One message of the conversation. */
export type InferenceMessage =
  | { role: 'system' | 'developer' | 'user'; content: ChatMessageContent; name?: string }
  /** `content` is null when the assistant turn only called tools. */
  | { role: 'assistant'; content: ChatMessageContent | null; name?: string; toolCalls?: ToolCall[] }
  /** The result of the call `toolCallId` of an earlier assistant turn. */
  | { role: 'tool'; content: ChatMessageContent; toolCallId: string };

/**
 * What a function without `parameters` takes ("an empty parameter list", as OpenAI documents it). One
 * object, so the gateway tells a default from a client's own schema (a token estimate counts only the latter).
 */
export const NO_PARAMETERS: JsonSchema = Object.freeze({ type: 'object', properties: {} });
/** A `json_schema` format without a schema asks for a JSON object, as `json_object` does. */
export const ANY_OBJECT: JsonSchema = Object.freeze({ type: 'object' });

/** A chat request as the gateway and its backends take it. */
export interface ChatRequest {
  messages: readonly InferenceMessage[];
  n: number;
  /** null = until the backend's natural end */
  maxTokens: number | null;
  stop: readonly string[];
  temperature: number;
  topP: number;
  presencePenalty: number;
  frequencyPenalty: number;
  seed: number | null;
  user: string | null;
  /** Functions the model may call; empty when the request has none. */
  tools: readonly ToolDefinition[];
  /** `auto` when the request has tools and no `tool_choice`, `none` when it has no tools. */
  toolChoice: ToolChoice;
  /** Whether one turn may call several tools (OpenAI's default: true). */
  parallelToolCalls: boolean;
  responseFormat: ResponseFormat;
  /** Whether each generated token's log probability is reported. */
  logprobs: boolean;
  /** How many alternatives per token, 0–20 (only with `logprobs`). */
  topLogprobs: number;
  /**
   * OpenAI parameters with no meaning of their own here (`logit_bias`, `reasoning_effort`, `verbosity`,
   * `prediction`), by their wire names, present only when the client sent one. The gateway admits them only
   * for models whose backend declares them (`backend-parameters.ts`), i.e. one that relays them upstream.
   */
  relayedParameters?: Readonly<Record<string, unknown>>;
  /**
   * OpenAI's `prompt_cache_key`, when the client sent one: requests with the same key share a prompt prefix.
   * A pool with prefix routing places them by it (pool/prompt-prefix.ts); it is not sent upstream.
   */
  promptCacheKey?: string;
}

/** A chat request as a front-end hands it to the session: the request, and where its parts came from. */
export interface ChatRequestOrigin {
  request: ChatRequest;
  origins: ParamOrigins;
}
