import { GatewayError } from '@mgw/contracts';
import type { BatchEndpoint, BatchError, BatchInputLine } from './batch.types';

/** A line as parsing left it: accepted, or refused with OpenAI's per-line error. */
export type ParsedLine = { ok: true; line: BatchInputLine } | { ok: false; error: BatchError };

/** Checks a line's body as its endpoint's front-end does, throwing that front-end's `GatewayError`. */
export type BodyCheck = (endpoint: BatchEndpoint, body: Record<string, unknown>) => void;

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

function lineError(line: number, code: string, message: string, param: string | null = null): ParsedLine {
  return { ok: false, error: { code, message, param, line } };
}

/**
 * One line of a batch's input file (`lineNumber` 1-based) against the batch's `endpoint`: JSON with a
 * string `custom_id`, `method` POST, `url` the batch's endpoint and a body its front-end accepts, not
 * streamed. Duplicate `custom_id`s are the caller's to find (they span lines).
 */
export function parseBatchLine(
  raw: string,
  lineNumber: number,
  endpoint: BatchEndpoint,
  checkBody: BodyCheck,
): ParsedLine {
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    return lineError(lineNumber, 'invalid_json_line', 'This line is not parseable as valid JSON.');
  }
  if (!isObject(value)) {
    return lineError(lineNumber, 'invalid_json_line', 'This line is not a JSON object.');
  }
  const { custom_id: customId, method, url, body } = value;
  if (typeof customId !== 'string' || customId.length === 0) {
    return lineError(
      lineNumber,
      'missing_required_parameter',
      "Missing required parameter: 'custom_id' (a non-empty string).",
      'custom_id',
    );
  }
  if (method !== 'POST') {
    return lineError(lineNumber, 'invalid_method', "Only the 'POST' method is supported.", 'method');
  }
  if (url !== endpoint) {
    return lineError(
      lineNumber,
      'invalid_url',
      `The URL provided for this request does not match the batch endpoint (${endpoint}).`,
      'url',
    );
  }
  if (!isObject(body)) {
    return lineError(lineNumber, 'missing_required_parameter', "Missing required parameter: 'body'.", 'body');
  }
  if (body.stream === true || body.background === true) {
    const param = body.stream === true ? 'stream' : 'background';
    return lineError(lineNumber, 'invalid_value', `'${param}' is not supported in a batch.`, `body.${param}`);
  }
  try {
    checkBody(endpoint, body);
  } catch (error) {
    if (!(error instanceof GatewayError)) throw error;
    return lineError(
      lineNumber,
      error.code ?? 'invalid_request',
      error.message,
      error.param === null ? 'body' : `body.${error.param}`,
    );
  }
  return { ok: true, line: { custom_id: customId, method: 'POST', url: endpoint, body } };
}
