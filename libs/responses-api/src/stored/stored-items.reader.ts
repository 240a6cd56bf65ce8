import { MESSAGE_ROLES, type ConversationItem } from '../responses.types';

/** A record that does not read (another version, tampered): treated as absent, and logged. */
export class StoredResponseError extends Error {}

const ROLES: ReadonlySet<unknown> = new Set(MESSAGE_ROLES);
const TEXT_PARTS: Readonly<Record<string, string>> = {
  input_text: 'text',
  output_text: 'text',
  refusal: 'refusal',
};

type Fields = Record<string, unknown>;

function isObject(value: unknown): value is Fields {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function optionalString(value: unknown): boolean {
  return value === undefined || typeof value === 'string';
}

function isPart(part: unknown): boolean {
  if (!isObject(part) || typeof part.type !== 'string') return false;
  if (part.type === 'input_image') return optionalString(part.image_url) && optionalString(part.file_id);
  const field = TEXT_PARTS[part.type];
  return field !== undefined && typeof part[field] === 'string';
}

function isContent(content: unknown): boolean {
  return typeof content === 'string' || (Array.isArray(content) && content.every(isPart));
}

function isItem(item: unknown): boolean {
  if (!isObject(item) || !optionalString(item.id)) return false;
  switch (item.type) {
    case 'message':
      return ROLES.has(item.role) && isContent(item.content);
    case 'function_call':
      return (
        typeof item.call_id === 'string' &&
        typeof item.name === 'string' &&
        typeof item.arguments === 'string'
      );
    case 'function_call_output':
      return typeof item.call_id === 'string' && isContent(item.output);
    default:
      return false;
  }
}

/**
 * Conversation items read back from Redis, checked against the shape the gateway stores (what the request
 * validator already accepted, references resolved): one pass of type checks, not the request validator again.
 */
export function readStoredItems(value: unknown, what: string): ConversationItem[] {
  if (!Array.isArray(value)) throw new StoredResponseError(`'${what}' is not an array`);
  for (const item of value) {
    if (!isItem(item))
      throw new StoredResponseError(`'${what}' holds an item that is not a conversation item`);
  }
  return value as ConversationItem[];
}
