import { GatewayError } from '@mgw/contracts';
import type { FileListQuery } from './catalog/redis-file.catalog';
import { FILE_PURPOSES, type FilePurpose } from './file-catalog';

/** OpenAI's page sizes for `GET /v1/files`. */
export const FILE_LIST_LIMITS = { min: 1, max: 10_000, default: 10_000 } as const;
const MAX_ID_LENGTH = 128;

function single(query: Record<string, unknown>, name: string): string | undefined {
  const value = query[name];
  if (value === undefined) return undefined;
  if (typeof value !== 'string') throw GatewayError.invalidRequest(`Invalid '${name}': give it once.`, name);
  return value;
}

/** `GET /v1/files`'s query: `after`, `limit`, `order` (newest first by default) and `purpose`. */
export function parseFileListQuery(query: Record<string, unknown>): FileListQuery {
  const after = single(query, 'after');
  if (after !== undefined && (after.length === 0 || after.length > MAX_ID_LENGTH)) {
    throw GatewayError.invalidRequest(`Invalid 'after': expected a file id.`, 'after');
  }
  const limitText = single(query, 'limit');
  const limit = limitText === undefined ? FILE_LIST_LIMITS.default : Number(limitText);
  if (
    limitText !== undefined &&
    (!/^\d+$/.test(limitText) || limit < FILE_LIST_LIMITS.min || limit > FILE_LIST_LIMITS.max)
  ) {
    throw GatewayError.invalidRequest(
      `Invalid 'limit': expected an integer between ${FILE_LIST_LIMITS.min} and ${FILE_LIST_LIMITS.max}.`,
      'limit',
    );
  }
  const order = single(query, 'order') ?? 'desc';
  if (order !== 'asc' && order !== 'desc') {
    throw GatewayError.invalidRequest(`Invalid 'order': expected one of asc, desc.`, 'order');
  }
  const purpose = single(query, 'purpose');
  if (purpose !== undefined && !(FILE_PURPOSES as readonly string[]).includes(purpose)) {
    throw GatewayError.invalidRequest(
      `Invalid 'purpose': expected one of ${FILE_PURPOSES.join(', ')}.`,
      'purpose',
    );
  }
  return { after, limit, order, purpose: purpose as FilePurpose | undefined };
}
