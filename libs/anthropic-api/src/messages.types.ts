import type { z } from 'zod';
import type {
  IMAGE_BLOCK,
  IMAGE_SOURCE,
  INPUT_MESSAGE,
  MESSAGES_TOOL,
  MESSAGES_TOOL_CHOICE,
  TEXT_BLOCK,
  THINKING_BLOCK,
  TOOL_RESULT_BLOCK,
  TOOL_USE_BLOCK,
} from './messages-request.schema';

/**
 * The Anthropic Messages API's wire shapes, as far as the gateway reads and writes them
 * (https://docs.anthropic.com/en/api/messages). The request types are those of the request schemas
 * (`messages-request.schema.ts`); the answer types are written here.
 */

export type TextBlock = z.infer<typeof TEXT_BLOCK>;
export type ImageSource = z.infer<typeof IMAGE_SOURCE>;
export type ImageBlock = z.infer<typeof IMAGE_BLOCK>;
export type ToolUseBlock = z.infer<typeof TOOL_USE_BLOCK>;
export type ToolResultBlock = z.infer<typeof TOOL_RESULT_BLOCK>;
export type ThinkingBlock = z.infer<typeof THINKING_BLOCK>;
export type UserContentBlock = TextBlock | ImageBlock | ToolResultBlock;
export type AssistantContentBlock = TextBlock | ToolUseBlock | ThinkingBlock;
export type InputMessage = z.infer<typeof INPUT_MESSAGE>;
export type MessagesTool = z.infer<typeof MESSAGES_TOOL>;
export type MessagesToolChoice = z.infer<typeof MESSAGES_TOOL_CHOICE>;
export type { CountTokensRequest, MessagesRequest } from './messages-request.schema';

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
