import { randomBytes } from 'node:crypto';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { text } from 'node:stream/consumers';
import { ListObjectsV2Command } from '@aws-sdk/client-s3';
import { S3RVER_CREDENTIALS, startLocalS3, type LocalS3 } from '../../../../test/fixtures/s3-server';
import { DirectoryObjectStore } from './directory-object.store';
import type { ObjectStore } from './object.store';
import { S3ObjectStore } from './s3-object.store';

/** A stream of `parts`, then `failure` if given (a client that disconnects mid-upload). */
function chunks(parts: string[], failure?: Error): Readable {
  return Readable.from(
    (async function* () {
      for (const part of parts) {
        yield Buffer.from(part);
        await new Promise((resolve) => setImmediate(resolve));
      }
      if (failure) throw failure;
    })(),
  );
}

interface Harness {
  store: ObjectStore;
  /** What the store holds, by name, whatever state it is in. */
  leftovers(): Promise<string[]>;
}

function behavesAsAnObjectStore(name: string, open: () => Promise<Harness>, close: () => Promise<void>) {
  describe(name, () => {
    let harness: Harness;

    beforeAll(async () => {
      harness = await open();
    });

    afterAll(close);

    it('writes a stream, answers its size, and reads it back', async () => {
      const content = '{"a":1}\n{"b":2}\n';
      expect(await harness.store.put('file-one', chunks(['{"a":1}\n', '{"b":2}\n']))).toBe(content.length);
      expect(await text((await harness.store.get('file-one'))!)).toBe(content);
    });

    it('writes a large stream in parts without holding it whole', async () => {
      const part = randomBytes(1024 * 1024).toString('hex'); // 2 MiB of text
      const size = await harness.store.put('file-large', chunks([part, part, part, part]));
      expect(size).toBe(part.length * 4);
      const read = await text((await harness.store.get('file-large'))!);
      expect(read.length).toBe(size);
      expect(read.slice(0, 64)).toBe(part.slice(0, 64));
    });

    it('answers undefined for an object it does not have', async () => {
      expect(await harness.store.get('file-missing')).toBeUndefined();
    });

    it('leaves nothing when the content fails mid-way, and the call rejects with its error', async () => {
      const failure = new Error('client went away');
      await expect(harness.store.put('file-broken', chunks(['half a ', 'file'], failure))).rejects.toBe(
        failure,
      );
      expect(await harness.store.get('file-broken')).toBeUndefined();
      expect((await harness.leftovers()).filter((entry) => entry.includes('file-broken'))).toEqual([]);
    });

    it('deletes an object, and deleting one that is gone is no error', async () => {
      await harness.store.put('file-gone', chunks(['x']));
      await harness.store.delete('file-gone');
      expect(await harness.store.get('file-gone')).toBeUndefined();
      await expect(harness.store.delete('file-gone')).resolves.toBeUndefined();
    });

    it('refuses a key that could escape its place', async () => {
      await expect(harness.store.put('../etc', chunks(['x']))).rejects.toThrow('not an object key');
      await expect(harness.store.get('a/b')).rejects.toThrow('not an object key');
    });
  });
}

let directory: string;
behavesAsAnObjectStore(
  'DirectoryObjectStore',
  async () => {
    directory = await mkdtemp(join(tmpdir(), 'mgw-files-'));
    return {
      store: new DirectoryObjectStore(join(directory, 'store')),
      leftovers: async () => [
        ...(await readdir(join(directory, 'store'))),
        ...(await readdir(join(directory, 'store', '.partial'))),
      ],
    };
  },
  () => rm(directory, { recursive: true, force: true }),
);

let s3: LocalS3;
let s3Store: S3ObjectStore;
behavesAsAnObjectStore(
  'S3ObjectStore (against s3rver)',
  async () => {
    s3 = await startLocalS3();
    s3Store = new S3ObjectStore({
      bucket: s3.bucket,
      prefix: 'files/',
      client: {
        region: 'us-east-1',
        endpoint: s3.endpoint,
        forcePathStyle: true,
        credentials: S3RVER_CREDENTIALS,
      },
    });
    return {
      store: s3Store,
      leftovers: async () => {
        const listed = await s3Store.client.send(new ListObjectsV2Command({ Bucket: s3.bucket }));
        return (listed.Contents ?? []).map((object) => object.Key ?? '');
      },
    };
  },
  async () => {
    s3Store?.close();
    await s3?.stop();
  },
);
