import { FILE_PURPOSES, type FileObject, type FilePurpose } from '../file-catalog';

/** The version of a file's hash layout; a record of another is not read. */
export const FILE_RECORD_VERSION = '1';

/** The fields of a file's hash, read back in this order. */
export const FILE_RECORD_FIELDS = ['v', 'filename', 'purpose', 'bytes', 'created_ms', 'expires_ms'] as const;

export interface FileRecord {
  id: string;
  filename: string;
  purpose: FilePurpose;
  bytes: number;
  createdMs: number;
  expiresMs: number;
}

/** The hash fields of a record, as saved. */
export function fieldsOf(record: FileRecord): Array<string | number> {
  return [
    'v',
    FILE_RECORD_VERSION,
    'filename',
    record.filename,
    'purpose',
    record.purpose,
    'bytes',
    record.bytes,
    'created_ms',
    record.createdMs,
    'expires_ms',
    record.expiresMs,
  ];
}

const PURPOSES: ReadonlySet<string> = new Set(FILE_PURPOSES);

function count(value: string | null): number | null {
  if (value === null || !/^\d{1,16}$/.test(value)) return null;
  return Number(value);
}

/**
 * A record from the fields Redis answered (in `FILE_RECORD_FIELDS` order): undefined when it is not there,
 * null when what is there does not read as a file (another layout, a damaged hash).
 */
export function readFileRecord(
  id: string,
  values: ReadonlyArray<string | null>,
): FileRecord | null | undefined {
  const [version, filename, purpose, bytes, created, expires] = values;
  if (version === null || version === undefined) return undefined;
  const record = {
    bytes: count(bytes ?? null),
    createdMs: count(created ?? null),
    expiresMs: count(expires ?? null),
  };
  if (
    version !== FILE_RECORD_VERSION ||
    typeof filename !== 'string' ||
    typeof purpose !== 'string' ||
    !PURPOSES.has(purpose) ||
    record.bytes === null ||
    record.createdMs === null ||
    record.expiresMs === null
  ) {
    return null;
  }
  return {
    id,
    filename,
    purpose: purpose as FilePurpose,
    bytes: record.bytes,
    createdMs: record.createdMs,
    expiresMs: record.expiresMs,
  };
}

/** The file as OpenAI's Files API shows it. */
export function toFileObject(record: FileRecord): FileObject {
  return {
    id: record.id,
    object: 'file',
    bytes: record.bytes,
    created_at: Math.floor(record.createdMs / 1000),
    expires_at: Math.floor(record.expiresMs / 1000),
    filename: record.filename,
    purpose: record.purpose,
    status: 'processed',
  };
}
