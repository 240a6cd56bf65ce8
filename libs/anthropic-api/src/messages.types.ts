/**
 * The Anthropic Messages API's wire shapes, as far as the gateway reads and writes them
 * (https://docs.anthropic.com/en/api/messages). Requests are read from plain bodies by
 * `validateMessagesRequest`; these types describe what it lets through.
 */

export interface CacheControl {
  type: 'ephemeral';
  ttl?: string;
}

export interface TextBlock {
  type: 'text';
  text: string;
  cache_control?: CacheControl | null;
  citations?: unknown;
}

export type ImageSource = { type: 'base64'; media_type: string; data: string } | { type: 'url'; url: string };

export interface ImageBlock {
  type: 'image';
  source: ImageSource;
  cache_control?: CacheControl | null;
}

export interface ToolUseBlock {
  type: 'tool_use';
  id: string;
  name: string;
  input: Record<string, unknown>;
  cache_control?: CacheControl | null;
}

export interface ToolResultBlock {
  type: 'tool_result';
  tool_use_id: string;
  content?: string | Array<TextBlock | ImageBlock>;
  is_error?: boolean;
  cache_control?: CacheControl | null;
}

/** Passed back by clients from earlier turns; no backend of ours reads them. */
export interface ThinkingBlock {
  type: 'thinking' | 'redacted_thinking';
}

export type UserContentBlock = TextBlock | ImageBlock | ToolResultBlock;
export type AssistantContentBlock = TextBlock | ToolUseBlock | ThinkingBlock;

export type InputMessage =
  | { role: 'user'; content: string | UserContentBlock[] }
  | { role: 'assistant'; content: string | AssistantContentBlock[] }
  /** Claude Code sends a system entry inside `messages` for a model name it does not know. */
  | { role: 'system'; content: string | TextBlock[] };

export interface MessagesTool {
  name: string;
  description?: string;
  input_schema: Record<string, unknown>;
}

export type MessagesToolChoice =
  | { type: 'auto'; disable_parallel_tool_use?: boolean }
  | { type: 'any'; disable_parallel_tool_use?: boolean }
  | { type: 'tool'; name: string; disable_parallel_tool_use?: boolean }
  | { type: 'none' };

/** A `POST /v1/messages` body as validated (fields accepted without effect are not kept). */
export interface MessagesRequest {
  model: string;
  max_tokens: number;
  messages: InputMessage[];
  system?: string | TextBlock[];
  stop_sequences?: string[];
  temperature?: number;
  top_p?: number;
  top_k?: number;
  tools?: MessagesTool[];
  tool_choice?: MessagesToolChoice;
  metadata?: { user_id?: string | null };
  stream?: boolean;
}

/** A `POST /v1/messages/count_tokens` body: a messages request without `max_tokens` and `stream`. */
export type CountTokensRequest = Omit<MessagesRequest, 'max_tokens' | 'stream'>;

export type StopReason = 'end_turn' | 'max_tokens' | 'stop_sequence' | 'tool_use' | 'refusal';

export interface MessagesUsage {
  input_tokens: number;
  output_tokens: number;
  cache_creation_input_tokens: number;
  cache_read_input_tokens: number;
}

export type ResponseContentBlock =
  { type: 'text'; text: string } | { type: 'tool_use'; id: string; name: string; input: unknown };

/** The answer of `POST /v1/messages`. */
export interface AnthropicMessage {
  id: string;
  type: 'message';
  role: 'assistant';
  content: ResponseContentBlock[];
  model: string;
  stop_reason: StopReason | null;
  stop_sequence: string | null;
  usage: MessagesUsage;
}

export type AnthropicErrorType =
  | 'invalid_request_error'
  | 'authentication_error'
  | 'permission_error'
  | 'not_found_error'
  | 'request_too_large'
  | 'rate_limit_error'
  | 'api_error'
  | 'timeout_error'
  | 'overloaded_error';

export interface AnthropicErrorBody {
  type: 'error';
  error: { type: AnthropicErrorType; message: string };
}
