import { randomBytes } from 'node:crypto';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { text } from 'node:stream/consumers';
import { Redis } from 'ioredis';
import { loadGatewayConfig } from '@mgw/config';
import type { RedisConnections } from '@mgw/redis';
import { waitFor } from '@mgw/testing';
import type { NewFile } from '../file-catalog';
import { ListObjectsV2Command } from '@aws-sdk/client-s3';
import { S3RVER_CREDENTIALS, startLocalS3, type LocalS3 } from '../../../../test/fixtures/s3-server';
import { DirectoryObjectStore } from '../objects/directory-object.store';
import type { ObjectStore } from '../objects/object.store';
import { S3ObjectStore } from '../objects/s3-object.store';
import { expiryMemberOf, fileExpiryIndexOf, newFileId } from './file-names';
import { RedisFileCatalog } from './redis-file.catalog';

const OWNER = 'key_owner';
const OTHER = 'key_other';
const batchFile = (filename = 'input.jsonl'): NewFile => ({ filename, purpose: 'batch' });

function failingAfter(part: string, failure: Error): Readable {
  return Readable.from(
    (async function* () {
      yield Buffer.from(part);
      await new Promise((resolve) => setImmediate(resolve));
      throw failure;
    })(),
  );
}

/** An object store for the catalog, and what it holds whatever the state (finished objects and partial ones). */
interface StoreHarness {
  store: ObjectStore;
  objects(): Promise<string[]>;
  close(): Promise<void>;
}

async function directoryStore(): Promise<StoreHarness> {
  const directory = await mkdtemp(join(tmpdir(), 'mgw-catalog-'));
  const store = new DirectoryObjectStore(directory);
  return {
    store,
    objects: async () => [
      ...(await readdir(directory)).filter((name) => name !== '.partial'),
      ...(await readdir(join(directory, '.partial')).catch(() => [])),
    ],
    close: () => rm(directory, { recursive: true, force: true }),
  };
}

async function s3Store(): Promise<StoreHarness> {
  const s3: LocalS3 = await startLocalS3();
  const store = new S3ObjectStore({
    bucket: s3.bucket,
    prefix: '',
    client: {
      region: 'us-east-1',
      endpoint: s3.endpoint,
      forcePathStyle: true,
      credentials: S3RVER_CREDENTIALS,
    },
  });
  return {
    store,
    objects: async () => {
      const listed = await store.client.send(new ListObjectsV2Command({ Bucket: s3.bucket }));
      return (listed.Contents ?? []).map((object) => object.Key ?? '');
    },
    close: async () => {
      store.close();
      await s3.stop();
    },
  };
}

describe.each([
  ['a directory store', directoryStore],
  ['an S3 store (s3rver)', s3Store],
])('RedisFileCatalog (real Redis, %s)', (_name, openStore) => {
  const namespace = `files-${randomBytes(4).toString('hex')}`;
  let redis: Redis;
  let harness: StoreHarness;
  let store: ObjectStore;
  let catalog: RedisFileCatalog;

  /** Every Redis name of the test's namespace. */
  const names = () => redis.keys(`${namespace}:*`);
  const objects = () => harness.objects();

  beforeAll(async () => {
    redis = new Redis('redis://127.0.0.1:6379', { lazyConnect: true, maxRetriesPerRequest: 1 });
    await redis.connect();
    harness = await openStore();
    store = harness.store;
    const config = loadGatewayConfig({ KEY_PREFIX: namespace, GATEWAY_API_KEYS: 'sk-catalog-spec' });
    catalog = new RedisFileCatalog({ commands: redis } as RedisConnections, config, store);
  });

  afterEach(async () => {
    const left = await names();
    if (left.length > 0) await redis.del(...left);
  });

  afterAll(async () => {
    await redis.quit();
    await harness.close();
  });

  it("stores a file as its key's, reads it back, lists it and deletes it with its content", async () => {
    const content = '{"custom_id":"a"}\n{"custom_id":"b"}\n';
    const file = await catalog.create(OWNER, batchFile(), Readable.from([Buffer.from(content)]));
    expect(file).toMatchObject({
      object: 'file',
      bytes: content.length,
      filename: 'input.jsonl',
      purpose: 'batch',
      status: 'processed',
    });
    expect(file.id).toMatch(/^file-/);
    expect(file.expires_at! - file.created_at).toBe(30 * 24 * 3600);

    expect(await catalog.get(OWNER, file.id)).toEqual(file);
    expect(await text((await catalog.read(OWNER, file.id))!)).toBe(content);
    expect(await catalog.list(OWNER, { limit: 10, order: 'desc' })).toEqual({
      object: 'list',
      data: [file],
      first_id: file.id,
      last_id: file.id,
      has_more: false,
    });

    expect(await catalog.delete(OWNER, file.id)).toBe(true);
    expect(await catalog.get(OWNER, file.id)).toBeUndefined();
    expect(await catalog.read(OWNER, file.id)).toBeUndefined();
    expect(await catalog.delete(OWNER, file.id)).toBe(false);
    expect(await objects()).toEqual([]);
    expect(await names()).toEqual([]);
  });

  it("never shows a key another key's file, nor lets it delete one", async () => {
    const file = await catalog.create(OWNER, batchFile(), Readable.from([Buffer.from('{}\n')]));
    expect(await catalog.get(OTHER, file.id)).toBeUndefined();
    expect(await catalog.read(OTHER, file.id)).toBeUndefined();
    expect(await catalog.delete(OTHER, file.id)).toBe(false);
    expect((await catalog.list(OTHER, { limit: 10, order: 'asc' })).data).toEqual([]);
    expect(await catalog.get(OWNER, file.id)).toEqual(file);
    expect(await catalog.delete(OWNER, file.id)).toBe(true);
  });

  it('keeps nothing of a file whose content fails mid-way, nor of one whose description is refused', async () => {
    const failure = new Error('client went away');
    await expect(catalog.create(OWNER, batchFile(), failingAfter('{"a":', failure))).rejects.toBe(failure);
    const refused = new Error('no purpose');
    await expect(
      catalog.store(OWNER, Readable.from([Buffer.from('{}\n')]), () => Promise.reject(refused)),
    ).rejects.toBe(refused);
    expect(await objects()).toEqual([]);
    expect(await names()).toEqual([]);
  });

  it('pages by creation time with after, limit, order and purpose, as OpenAI does', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 5; i += 1) {
      const purpose = i === 2 ? 'batch_output' : 'batch';
      const file = await catalog.create(
        OWNER,
        { filename: `f${i}`, purpose },
        Readable.from([Buffer.from('x')]),
      );
      ids.push(file.id);
    }
    const first = await catalog.list(OWNER, { limit: 2, order: 'asc' });
    expect(first.data.map((f) => f.id)).toEqual(ids.slice(0, 2));
    expect(first).toMatchObject({ first_id: ids[0], last_id: ids[1], has_more: true });
    const second = await catalog.list(OWNER, { after: first.last_id!, limit: 2, order: 'asc' });
    expect(second.data.map((f) => f.id)).toEqual(ids.slice(2, 4));
    const last = await catalog.list(OWNER, { after: second.last_id!, limit: 2, order: 'asc' });
    expect(last).toMatchObject({ data: [{ id: ids[4] }], has_more: false });

    const newest = await catalog.list(OWNER, { limit: 3, order: 'desc' });
    expect(newest.data.map((f) => f.id)).toEqual([ids[4], ids[3], ids[2]]);
    const batch = await catalog.list(OWNER, { limit: 10, order: 'desc', purpose: 'batch' });
    expect(batch.data.map((f) => f.id)).toEqual([ids[4], ids[3], ids[1], ids[0]]);
    const outputs = await catalog.list(OWNER, { limit: 10, order: 'desc', purpose: 'batch_output' });
    expect(outputs.data.map((f) => f.id)).toEqual([ids[2]]);
    expect((await catalog.list(OWNER, { after: newFileId(), limit: 10, order: 'asc' })).data).toEqual([]);

    for (const id of ids) await catalog.delete(OWNER, id);
  });

  it('removes an expired file from Redis and from the store on a sweep', async () => {
    const file = await catalog.create(
      OWNER,
      { ...batchFile(), expiresAfterSeconds: 1 },
      Readable.from([Buffer.from('{}\n')]),
    );
    expect(await catalog.sweep(100)).toBe(0);
    expect(await objects()).toEqual([file.id]);
    await waitFor('the file to be due and swept', async () => (await catalog.sweep(100)) === 1, 5000);
    expect(await catalog.get(OWNER, file.id)).toBeUndefined();
    expect(await objects()).toEqual([]);
    expect(await names()).toEqual([]);
  });

  it('removes on a sweep what an upload interrupted by a crash left in the store', async () => {
    const id = newFileId();
    await store.put(id, Readable.from([Buffer.from('half')]));
    // What a gateway killed mid-upload leaves: the content and its reservation, now due; no record.
    await redis.zadd(fileExpiryIndexOf(namespace), 0, expiryMemberOf(id, OWNER));
    expect(await catalog.sweep(100)).toBe(1);
    expect(await objects()).toEqual([]);
    expect(await names()).toEqual([]);
  });
});
