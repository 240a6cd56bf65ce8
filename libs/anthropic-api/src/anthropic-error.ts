import type { GatewayError } from '@mgw/contracts';
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

/**
 * The Anthropic form of a gateway error: the type follows the status, and every 503 of the gateway (a full
 * queue, a model with no worker, a gateway shutting down) is Anthropic's `overloaded_error` with its 529,
 * which Anthropic's SDKs and Claude Code retry. The message is the gateway's own.
 */
export function toAnthropicError(error: GatewayError): AnthropicError {
  const status = error.status === 503 ? OVERLOADED_STATUS : error.status;
  return { status, body: { type: 'error', error: { type: typeOf(status), message: error.message } } };
}
