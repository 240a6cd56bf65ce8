import type { Readable } from 'node:stream';

/** What a file is for (OpenAI's `purpose`): `batch` for a batch's input, `batch_output` for what a batch writes. */
export const FILE_PURPOSES = ['batch', 'batch_output'] as const;
export type FilePurpose = (typeof FILE_PURPOSES)[number];

/** A stored file as OpenAI's Files API shows it. */
export interface FileObject {
  id: string;
  object: 'file';
  bytes: number;
  created_at: number;
  expires_at: number | null;
  filename: string;
  purpose: FilePurpose;
  status: 'uploaded' | 'processed' | 'error';
}

/** What a new file is, apart from its content. */
export interface NewFile {
  filename: string;
  purpose: FilePurpose;
  /** Seconds until the file expires and is removed from the store; undefined for the configured default. */
  expiresAfterSeconds?: number;
}

/**
 * The files of every API key: their metadata and their content in the configured object store. Each file
 * belongs to the key that created it; every method takes that key's id, and a file of another key is
 * `undefined`/`false` as if it did not exist. Content is streamed both ways, never held whole.
 */
export abstract class FileCatalog {
  /** Stores `content` as a new file of `ownerKeyId`; nothing is left behind when `content` fails. */
  abstract create(ownerKeyId: string, file: NewFile, content: Readable): Promise<FileObject>;
  abstract get(ownerKeyId: string, fileId: string): Promise<FileObject | undefined>;
  /** The file's content, or undefined when the key has no such file. */
  abstract read(ownerKeyId: string, fileId: string): Promise<Readable | undefined>;
  /** Removes the file and its content; false when the key has no such file. */
  abstract delete(ownerKeyId: string, fileId: string): Promise<boolean>;
}
