import { createWriteStream } from 'node:fs';
import { mkdir, open, rename, rm } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { assertObjectKey, ObjectStore } from './object.store';

/** Where writes in progress go, beside the finished objects: a crash leaves them where `delete` finds them. */
const PARTIAL = '.partial';

/**
 * Objects as files of one directory (a volume in compose, a PVC in Kubernetes). A write goes to a partial
 * file first and is renamed into place once complete, so a reader never sees half an object.
 */
export class DirectoryObjectStore extends ObjectStore {
  readonly root: string;
  private ready: Promise<unknown> | undefined;

  constructor(root: string) {
    super();
    this.root = resolve(root);
  }

  async put(key: string, content: Readable): Promise<number> {
    assertObjectKey(key);
    await this.ensureFolders();
    const partial = this.partialPath(key);
    const file = createWriteStream(partial, { flags: 'w' });
    try {
      await pipeline(content, file);
      await rename(partial, this.path(key));
      return file.bytesWritten;
    } catch (error) {
      await rm(partial, { force: true });
      throw error;
    }
  }

  async get(key: string): Promise<Readable | undefined> {
    assertObjectKey(key);
    try {
      const handle = await open(this.path(key), 'r');
      return handle.createReadStream();
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw error;
    }
  }

  async delete(key: string): Promise<void> {
    assertObjectKey(key);
    await Promise.all([rm(this.path(key), { force: true }), rm(this.partialPath(key), { force: true })]);
  }

  private path(key: string): string {
    return join(this.root, key);
  }

  private partialPath(key: string): string {
    return join(this.root, PARTIAL, key);
  }

  /** Created on first write, not at start: a gateway that never stores a file leaves no directory behind. */
  private ensureFolders(): Promise<unknown> {
    this.ready ??= mkdir(join(this.root, PARTIAL), { recursive: true }).catch((error: unknown) => {
      this.ready = undefined;
      throw error;
    });
    return this.ready;
  }
}
