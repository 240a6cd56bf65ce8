import type { GatewayError } from '@mgw/contracts';
import { INVALID_JSON_PREFIX } from '@mgw/http';
import type { AnthropicErrorBody, AnthropicErrorType } from './messages.types';

/** Anthropic's status for an overloaded API, which its SDKs retry. */
export const OVERLOADED_STATUS = 529;

/** A gateway error as Anthropic would answer it: its status and its `{type: 'error', error}` body. */
export interface AnthropicError {
  status: number;
  body: AnthropicErrorBody;
}

function typeOf(status: number): AnthropicErrorType {
  switch (status) {
    case 400:
    case 405:
    case 415:
      return 'invalid_request_error';
    case 401:
      return 'authentication_error';
    case 403:
      return 'permission_error';
    case 404:
      return 'not_found_error';
    case 413:
      return 'request_too_large';
    case 429:
      return 'rate_limit_error';
    case 504:
      return 'timeout_error';
    case 503:
    case OVERLOADED_STATUS:
      return 'overloaded_error';
    default:
      return status >= 500 ? 'api_error' : 'invalid_request_error';
  }
}

/** Anthropic's own words for a request without a key and for a key it does not accept. */
export const MISSING_KEY_MESSAGE = 'x-api-key header is required';
export const INVALID_KEY_MESSAGE = 'invalid x-api-key';

/**
 * The message in Anthropic's voice. The gateway's key refusals and its refusal of a body that is not JSON
 * speak OpenAI's (a Bearer header, OpenAI's phrases), so they get Anthropic's words: for a 401,
 * `invalid_api_key` is a key that was sent and refused (unknown, disabled, expired: Anthropic tells them
 * apart no more than this), any other 401 a key that was not sent; the parser's own detail is kept. Every
 * other message is the gateway's own, which names no protocol.
 */
function messageOf(error: GatewayError): string {
  if (error.status === 401) {
    return error.code === 'invalid_api_key' ? INVALID_KEY_MESSAGE : MISSING_KEY_MESSAGE;
  }
  if (error.code === 'invalid_json' && error.message.startsWith(INVALID_JSON_PREFIX)) {
    return `The request body is not valid JSON: ${error.message.slice(INVALID_JSON_PREFIX.length)}`;
  }
  return error.message;
}

/**
 * The Anthropic form of a gateway error: the type follows the status, and every 503 of the gateway (a full
 * queue, a model with no worker, a gateway shutting down) is Anthropic's `overloaded_error` with its 529,
 * which Anthropic's SDKs and Claude Code retry.
 */
export function toAnthropicError(error: GatewayError): AnthropicError {
  const status = error.status === 503 ? OVERLOADED_STATUS : error.status;
  return { status, body: { type: 'error', error: { type: typeOf(status), message: messageOf(error) } } };
}
