/** Every `error.type` the gateway answers with: the API document lists them, a reply's error must be one. */
export const ERROR_TYPES = [
  'invalid_request_error',
  'authentication_error',
  'permission_error',
  'not_found_error',
  'rate_limit_error',
  // OpenAI's types of a 429 `rate_limit_exceeded`: which limit was hit.
  'requests',
  'tokens',
  // OpenAI's type (and code) of a 429 for a spent budget: retrying soon does not help.
  'insufficient_quota',
  'server_error',
  'timeout_error',
] as const;
export type ErrorType = (typeof ERROR_TYPES)[number];

export interface ErrorObject {
  message: string;
  type: ErrorType;
  param: string | null;
  code: string | null;
}

/** The OpenAI error envelope every non-2xx answer (and every mid-stream failure) uses. */
export interface ErrorBody {
  error: ErrorObject;
}
