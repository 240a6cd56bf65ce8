import type { ErrorObject } from '@mgw/contracts';
import type { z } from 'zod';
import type {
  FUNCTION_CALL_ITEM,
  FUNCTION_CALL_OUTPUT_ITEM,
  INPUT_CONTENT_PART,
  ITEM_REFERENCE,
  MESSAGE_ITEM,
  REASONING_ITEM,
} from './responses-request.schema';

export { MESSAGE_ROLES, type MessageRole } from './responses-request.schema';

/** The wire shapes of an input, from the request schema. */
export type InputContentPart = z.infer<typeof INPUT_CONTENT_PART>;
/** A message item; one sent without a `type` gets it when the body is read. */
export type MessageItem = z.infer<typeof MESSAGE_ITEM> & { type: 'message' };
export type FunctionCallItem = z.infer<typeof FUNCTION_CALL_ITEM>;
export type FunctionCallOutputItem = z.infer<typeof FUNCTION_CALL_OUTPUT_ITEM>;
export type ItemReference = z.infer<typeof ITEM_REFERENCE>;
export type ReasoningItem = z.infer<typeof REASONING_ITEM>;
export type InputItem =
  MessageItem | FunctionCallItem | FunctionCallOutputItem | ItemReference | ReasoningItem;

/** An item the model sees: references resolved, nothing that only a client keeps. */
export type ConversationItem = MessageItem | FunctionCallItem | FunctionCallOutputItem;

export interface FunctionTool {
  type: 'function';
  name: string;
  description?: string | null;
  parameters?: Record<string, unknown> | null;
  strict?: boolean | null;
}

export type TextFormat =
  | { type: 'text' }
  | { type: 'json_object' }
  | {
      type: 'json_schema';
      name: string;
      schema: Record<string, unknown>;
      description?: string;
      strict?: boolean | null;
    };

export type ResponseToolChoice =
  | 'none'
  | 'auto'
  | 'required'
  | { type: 'function'; name: string }
  | { type: string; [field: string]: unknown };

/** A Responses body after validation: its input as items, its tools split into what a model can run. */
export interface ResponsesRequest {
  model: string | undefined;
  input: InputItem[];
  instructions: string | null;
  /** Function tools, namespaces flattened; where each came from in the body (for errors). */
  tools: Array<{ tool: FunctionTool; param: string }>;
  /** The types of the hosted tools left out of what the model sees (web search…), one per tool. */
  hostedTools: string[];
  toolChoice: ResponseToolChoice;
  parallelToolCalls: boolean;
  textFormat: TextFormat;
  temperature: number | null;
  topP: number | null;
  maxOutputTokens: number | null;
  stream: boolean;
  store: boolean;
  background: boolean;
  previousResponseId: string | null;
  metadata: Record<string, string>;
  /** The request's own settings, echoed in the response object as OpenAI does. */
  echo: ResponseEcho;
  /** Fields passed on to the chat request as they are (undefined: not sent). */
  passThrough: {
    user: string | undefined;
    safety_identifier: string | undefined;
    prompt_cache_key: string | undefined;
  };
}

/** The request settings a response object repeats. */
export interface ResponseEcho {
  instructions: string | null;
  max_output_tokens: number | null;
  metadata: Record<string, string>;
  parallel_tool_calls: boolean;
  previous_response_id: string | null;
  reasoning: { effort: string | null; summary: string | null };
  service_tier: string;
  store: boolean;
  temperature: number;
  text: { format: TextFormat; verbosity?: string };
  tool_choice: ResponseToolChoice;
  tools: unknown[];
  top_p: number;
  truncation: string;
  user: string | null;
  background: boolean;
  prompt_cache_key: string | null;
  safety_identifier: string | null;
}

export type ResponseStatus = 'queued' | 'in_progress' | 'completed' | 'incomplete' | 'failed' | 'cancelled';

export interface OutputText {
  type: 'output_text';
  text: string;
  annotations: unknown[];
  logprobs: unknown[];
}

export interface OutputMessage {
  type: 'message';
  id: string;
  status: 'in_progress' | 'completed' | 'incomplete';
  role: 'assistant';
  content: OutputText[];
}

export interface OutputFunctionCall {
  type: 'function_call';
  id: string;
  status: 'in_progress' | 'completed' | 'incomplete';
  call_id: string;
  name: string;
  arguments: string;
}

export type OutputItem = OutputMessage | OutputFunctionCall;

export interface ResponseUsage {
  input_tokens: number;
  input_tokens_details: { cached_tokens: number };
  output_tokens: number;
  output_tokens_details: { reasoning_tokens: number };
  total_tokens: number;
}

/** OpenAI's `response` object. */
export interface ResponseObject extends ResponseEcho {
  id: string;
  object: 'response';
  created_at: number;
  completed_at: number | null;
  status: ResponseStatus;
  error: { code: string; message: string } | null;
  incomplete_details: { reason: 'max_output_tokens' | 'content_filter' } | null;
  model: string;
  output: OutputItem[];
  usage: ResponseUsage | null;
}

export interface ResponseDeleted {
  id: string;
  object: 'response.deleted';
  deleted: true;
}

/** An `error` event's body (the stream's error, OpenAI's shape). */
export type StreamErrorEvent = Pick<ErrorObject, 'code' | 'message' | 'param'>;
