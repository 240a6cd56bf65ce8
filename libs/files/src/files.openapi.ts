import type { FileObject } from './file-catalog';
import { FILE_PURPOSES } from './file-catalog';
import type { FileList } from './catalog/redis-file.catalog';
import { UPLOAD_EXPIRY_SECONDS, UPLOAD_PURPOSES } from './upload/file-upload.service';

/** A JSON Schema (2020-12) as OpenAPI 3.1 uses it. */
type SchemaObject = Record<string, unknown>;

export const FILE_SCHEMA: SchemaObject = {
  type: 'object',
  description: "A stored file (OpenAI's `file` object).",
  required: ['id', 'object', 'bytes', 'created_at', 'expires_at', 'filename', 'purpose', 'status'],
  properties: {
    id: { type: 'string', description: 'The file id, `file-…`.' },
    object: { const: 'file' },
    bytes: { type: 'integer', description: 'Its size in bytes.' },
    created_at: { type: 'integer', description: 'Unix timestamp (seconds).' },
    expires_at: {
      type: ['integer', 'null'],
      description: 'Unix timestamp (seconds) when it is removed.',
    },
    filename: { type: 'string' },
    purpose: { enum: [...FILE_PURPOSES] },
    status: { enum: ['uploaded', 'processed', 'error'] },
  },
};

export const FILE_LIST_SCHEMA: SchemaObject = {
  type: 'object',
  required: ['object', 'data', 'first_id', 'last_id', 'has_more'],
  properties: {
    object: { const: 'list' },
    data: { type: 'array', items: FILE_SCHEMA },
    first_id: { type: ['string', 'null'] },
    last_id: { type: ['string', 'null'] },
    has_more: { type: 'boolean' },
  },
};

export const FILE_DELETED_SCHEMA: SchemaObject = {
  type: 'object',
  required: ['id', 'object', 'deleted'],
  properties: { id: { type: 'string' }, object: { const: 'file' }, deleted: { const: true } },
};

export const FILE_UPLOAD_SCHEMA: SchemaObject = {
  type: 'object',
  required: ['file', 'purpose'],
  properties: {
    file: {
      type: 'string',
      contentMediaType: 'application/octet-stream',
      description: 'The file: for `batch`, JSONL, one request per line.',
    },
    purpose: { enum: [...UPLOAD_PURPOSES] },
    'expires_after[anchor]': { const: 'created_at' },
    'expires_after[seconds]': {
      type: 'integer',
      minimum: UPLOAD_EXPIRY_SECONDS.min,
      maximum: UPLOAD_EXPIRY_SECONDS.max,
    },
  },
};

export const FILE_EXAMPLE: FileObject = {
  id: 'file-Qm3w7yBf0cT1xV5nR8sK2pLd',
  object: 'file',
  bytes: 1420,
  created_at: 1767225600,
  expires_at: 1769817600,
  filename: 'requests.jsonl',
  purpose: 'batch',
  status: 'processed',
};

export const FILE_LIST_EXAMPLE: FileList = {
  object: 'list',
  data: [FILE_EXAMPLE],
  first_id: FILE_EXAMPLE.id,
  last_id: FILE_EXAMPLE.id,
  has_more: false,
};
