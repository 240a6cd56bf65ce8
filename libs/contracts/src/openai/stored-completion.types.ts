import type { ChatContentPart, ChatRole } from '../chat/chat-request.schema';
import type { ChatCompletion, ToolCall } from './chat-completion.types';

/** A stored chat completion as retrieve, list and update return it: the completion and its metadata. */
export interface StoredChatCompletion extends ChatCompletion {
  metadata: Record<string, string>;
}

/** One message of a stored completion's request (OpenAI's `ChatCompletionStoreMessage`). */
export interface ChatCompletionStoreMessage {
  /** `<completion id>-<index of the message in the request>`. */
  id: string;
  role: ChatRole;
  /** The text; for content parts, their text parts joined (null when there are none). */
  content: string | null;
  name: string | null;
  /** The content parts, when the message was sent as parts; otherwise null. */
  content_parts: ChatContentPart[] | null;
  tool_calls?: ToolCall[];
  tool_call_id?: string;
}

/** `DELETE /v1/chat/completions/{id}`. */
export interface ChatCompletionDeleted {
  id: string;
  object: 'chat.completion.deleted';
  deleted: true;
}

/** OpenAI's cursor page: the SDK asks for the next one with `after` = the last item's id while `has_more`. */
export interface CursorPage<T extends { id: string }> {
  object: 'list';
  data: T[];
  first_id: string | null;
  last_id: string | null;
  has_more: boolean;
}
