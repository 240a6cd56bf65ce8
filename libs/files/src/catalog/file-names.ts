import { randomBytes } from 'node:crypto';
import { FILE_PURPOSES, type FilePurpose } from '../file-catalog';

/**
 * The Redis names of one API key's files: per file a hash, an index of the key's files by creation time
 * and one per purpose. Every name carries the key id, so a key can only ever address its own; the `{…}` hash
 * tag keeps one key's names in one cluster slot for its scripts.
 */
export function fileNamesFor(namespace: string, keyId: string) {
  const base = `${namespace}:files:{${keyId}}`;
  return {
    record: (fileId: string) => `${base}:f:${fileId}`,
    index: `${base}:index`,
    purposeIndex: (purpose: FilePurpose) => `${base}:purpose:${purpose}`,
    /** Every index a file is in, whatever its purpose (for a delete that need not read the record first). */
    allIndexes: [`${base}:index`, ...FILE_PURPOSES.map((purpose) => `${base}:purpose:${purpose}`)],
  };
}

export type FileNames = ReturnType<typeof fileNamesFor>;

/**
 * Every file of every key by when it is due for removal (its expiry; an upload's latest end while it is
 * stored), swept on an interval. Members are `fileId:keyId` (a file id has no ':').
 */
export const fileExpiryIndexOf = (namespace: string): string => `${namespace}:files:expiry`;

export function expiryMemberOf(fileId: string, keyId: string): string {
  return `${fileId}:${keyId}`;
}

export function parseExpiryMember(member: string): { fileId: string; keyId: string } | null {
  const colon = member.indexOf(':');
  if (colon <= 0 || colon === member.length - 1) return null;
  return { fileId: member.slice(0, colon), keyId: member.slice(colon + 1) };
}

/** A new file id, OpenAI's `file-` and 24 random characters; also the object's name in the store. */
export function newFileId(): string {
  return `file-${randomBytes(18).toString('base64url')}`;
}

/** Whether `id` could be one of ours (anything else is no file, without a Redis call). */
export function isFileId(id: string): boolean {
  return /^file-[A-Za-z0-9_-]{24}$/.test(id);
}
