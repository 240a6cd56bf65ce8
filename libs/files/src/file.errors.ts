import { GatewayError } from '@mgw/contracts';

/** The Files API's refusals, in OpenAI's words where OpenAI has them. */
export const FileErrors = {
  /** Also the answer for another key's file: a key cannot tell whether a file it does not own exists. */
  notFound: (fileId: string) =>
    new GatewayError(404, 'invalid_request_error', null, `No such File object: ${fileId}`, 'id'),

  notMultipart: (contentType: string | undefined) =>
    GatewayError.invalidRequest(
      `Invalid Content-Type header (${contentType ?? 'none'}): a file is uploaded as multipart/form-data, with a 'file' part and a 'purpose' field.`,
      null,
      'invalid_content_type',
    ),

  malformed: (reason: string) =>
    GatewayError.invalidRequest(
      `The multipart body could not be read: ${reason}.`,
      null,
      'invalid_multipart',
    ),

  missing: (param: 'file' | 'purpose') =>
    GatewayError.invalidRequest(
      `Missing required parameter: '${param}'.`,
      param,
      'missing_required_parameter',
    ),

  invalidPurpose: (purpose: string, allowed: readonly string[]) =>
    GatewayError.invalidRequest(
      `'${purpose.length > 64 ? `${purpose.slice(0, 64)}…` : purpose}' is not one of [${allowed.map((p) => `'${p}'`).join(', ')}] - 'purpose'`,
      'purpose',
    ),

  invalidField: (param: string, expected: string) =>
    GatewayError.invalidRequest(`Invalid '${param}': expected ${expected}.`, param),

  tooLarge: (maxBytes: number) =>
    new GatewayError(
      413,
      'invalid_request_error',
      'file_too_large',
      `The file is larger than the ${maxBytes} bytes allowed for a batch input file.`,
      'file',
    ),

  tooManyLines: (maxLines: number) =>
    GatewayError.invalidRequest(
      `The file has more than ${maxLines} lines: a batch input file holds at most ${maxLines} requests, one per line.`,
      'file',
      'too_many_lines',
    ),

  timedOut: () =>
    new GatewayError(408, 'invalid_request_error', 'request_timeout', 'The file was not received in time.'),

  /** A multipart body on a route that takes JSON: what the gateway answers any other media type there. */
  unsupportedMediaType: () =>
    new GatewayError(
      415,
      'invalid_request_error',
      'unsupported_media_type',
      "Unsupported Content-Type: send the body as JSON with 'Content-Type: application/json'.",
    ),
} as const;
