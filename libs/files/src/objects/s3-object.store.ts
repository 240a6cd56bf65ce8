import {
  DeleteObjectCommand,
  GetObjectCommand,
  NoSuchKey,
  S3Client,
  type S3ClientConfig,
} from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import type { OnApplicationShutdown } from '@nestjs/common';
import { PassThrough, Readable } from 'node:stream';
import { assertObjectKey, ObjectStore } from './object.store';

export interface S3ObjectStoreSettings {
  bucket: string;
  /** What every object's name starts with (a bucket shared with other data). */
  prefix: string;
  /** The client's settings: region, endpoint, path style; credentials from the AWS environment unless given. */
  client: S3ClientConfig;
}

/** S3's smallest part: an upload holds at most `PART_SIZE × QUEUE_SIZE` of a file in memory. */
const PART_SIZE = 5 * 1024 * 1024;
const QUEUE_SIZE = 2;

/**
 * Objects in an S3-compatible bucket (AWS S3, MinIO, Ceph, GCS's S3 API). A write is a multipart upload of
 * the stream as it arrives (one PUT when it is smaller than a part); a failed one is aborted, so no part is
 * left billed. A bucket should still abort incomplete multipart uploads by a lifecycle rule, for the writes
 * of a gateway that was killed mid-upload.
 */
export class S3ObjectStore extends ObjectStore implements OnApplicationShutdown {
  readonly client: S3Client;

  constructor(private readonly settings: S3ObjectStoreSettings) {
    super();
    this.client = new S3Client(settings.client);
  }

  async put(key: string, content: Readable): Promise<number> {
    assertObjectKey(key);
    let bytes = 0;
    // The counter sees every byte the upload reads; an error of `content` reaches the upload through it.
    const counted = new PassThrough();
    counted.on('data', (chunk: Buffer) => (bytes += chunk.length));
    content.once('error', (error) => counted.destroy(error));
    content.pipe(counted);
    const upload = new Upload({
      client: this.client,
      params: { Bucket: this.settings.bucket, Key: this.name(key), Body: counted },
      partSize: PART_SIZE,
      queueSize: QUEUE_SIZE,
      leavePartsOnError: false,
    });
    try {
      await upload.done();
      return bytes;
    } catch (error) {
      content.unpipe(counted);
      counted.destroy();
      await this.delete(key).catch(() => undefined);
      throw error;
    }
  }

  async get(key: string): Promise<Readable | undefined> {
    assertObjectKey(key);
    try {
      const answer = await this.client.send(
        new GetObjectCommand({ Bucket: this.settings.bucket, Key: this.name(key) }),
      );
      return answer.Body instanceof Readable ? answer.Body : undefined;
    } catch (error) {
      if (error instanceof NoSuchKey) return undefined;
      throw error;
    }
  }

  async delete(key: string): Promise<void> {
    assertObjectKey(key);
    await this.client.send(new DeleteObjectCommand({ Bucket: this.settings.bucket, Key: this.name(key) }));
  }

  /** Closes the client's connections. */
  close(): void {
    this.client.destroy();
  }

  onApplicationShutdown(): void {
    this.close();
  }

  private name(key: string): string {
    return `${this.settings.prefix}${key}`;
  }
}
