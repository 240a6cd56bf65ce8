import { randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { FileCatalog, type FileObject, type NewFile } from '@mgw/files';

interface StoredFile {
  owner: string;
  file: FileObject;
  content: Buffer;
}

/** A `FileCatalog` in memory, for specs: the files of every key, each readable only by its owner. */
export class InMemoryFileCatalog extends FileCatalog {
  private readonly files = new Map<string, StoredFile>();

  async create(ownerKeyId: string, spec: NewFile, content: Readable): Promise<FileObject> {
    const chunks: Buffer[] = [];
    for await (const chunk of content)
      chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(String(chunk)));
    const bytes = Buffer.concat(chunks);
    const file: FileObject = {
      id: `file-${randomBytes(12).toString('hex')}`,
      object: 'file',
      bytes: bytes.length,
      created_at: Math.floor(Date.now() / 1000),
      expires_at: null,
      filename: spec.filename,
      purpose: spec.purpose,
      status: 'processed',
    };
    this.files.set(file.id, { owner: ownerKeyId, file, content: bytes });
    return file;
  }

  /** A file of `ownerKeyId` with `text` as its content. */
  add(ownerKeyId: string, text: string, purpose: NewFile['purpose'] = 'batch'): Promise<FileObject> {
    return this.create(ownerKeyId, { filename: 'input.jsonl', purpose }, Readable.from([Buffer.from(text)]));
  }

  get(ownerKeyId: string, fileId: string): Promise<FileObject | undefined> {
    return Promise.resolve(this.find(ownerKeyId, fileId)?.file);
  }

  read(ownerKeyId: string, fileId: string): Promise<Readable | undefined> {
    const stored = this.find(ownerKeyId, fileId);
    // In small chunks, so line splitting across chunks is exercised.
    const chunks: Buffer[] = [];
    if (stored !== undefined) {
      for (let at = 0; at < stored.content.length; at += 100)
        chunks.push(stored.content.subarray(at, at + 100));
    }
    return Promise.resolve(stored === undefined ? undefined : Readable.from(chunks));
  }

  delete(ownerKeyId: string, fileId: string): Promise<boolean> {
    return Promise.resolve(this.find(ownerKeyId, fileId) !== undefined && this.files.delete(fileId));
  }

  /** A file's content as text (any owner's), for assertions. */
  text(fileId: string): string {
    return this.files.get(fileId)?.content.toString('utf8') ?? '';
  }

  private find(ownerKeyId: string, fileId: string): StoredFile | undefined {
    const stored = this.files.get(fileId);
    return stored?.owner === ownerKeyId ? stored : undefined;
  }
}
