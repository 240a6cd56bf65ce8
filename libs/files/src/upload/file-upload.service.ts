import { basename } from 'node:path';
import { Inject, Injectable } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { GatewayConfig } from '@mgw/config';
import { endBodyDeadline } from '@mgw/http';
import { RedisFileCatalog } from '../catalog/redis-file.catalog';
import type { FileObject, FilePurpose, NewFile } from '../file-catalog';
import { FileErrors } from '../file.errors';
import { readMultipartUpload, type UploadForm } from './multipart-upload.reader';

/** What a client may upload a file for; `batch_output` files are the gateway's to write. */
export const UPLOAD_PURPOSES = ['batch'] as const satisfies readonly FilePurpose[];

/** OpenAI's bounds on `expires_after[seconds]`: an hour to 30 days. */
export const UPLOAD_EXPIRY_SECONDS = { min: 3600, max: 30 * 24 * 3600 } as const;

const MAX_FILENAME_LENGTH = 255;

function purposeOf(fields: ReadonlyMap<string, string>): FilePurpose {
  const purpose = fields.get('purpose');
  if (purpose === undefined) throw FileErrors.missing('purpose');
  if (!(UPLOAD_PURPOSES as readonly string[]).includes(purpose)) {
    throw FileErrors.invalidPurpose(purpose, UPLOAD_PURPOSES);
  }
  return purpose as FilePurpose;
}

/** OpenAI's `expires_after`: `anchor` (`created_at`, the only one) and `seconds`, as form fields. */
function expiryOf(fields: ReadonlyMap<string, string>): number | undefined {
  const anchor = fields.get('expires_after[anchor]');
  const seconds = fields.get('expires_after[seconds]');
  if (anchor === undefined && seconds === undefined) return undefined;
  if (anchor !== 'created_at') throw FileErrors.invalidField('expires_after[anchor]', "'created_at'");
  const value = Number(seconds);
  if (
    seconds === undefined ||
    !/^\d+$/.test(seconds) ||
    value < UPLOAD_EXPIRY_SECONDS.min ||
    value > UPLOAD_EXPIRY_SECONDS.max
  ) {
    throw FileErrors.invalidField(
      'expires_after[seconds]',
      `an integer between ${UPLOAD_EXPIRY_SECONDS.min} and ${UPLOAD_EXPIRY_SECONDS.max}`,
    );
  }
  return value;
}

/** The part's filename without any path a client put in it; a file must have a name to be listed by. */
function filenameOf(form: UploadForm): string {
  const name = basename(form.filename.replaceAll('\\', '/')).trim();
  return name === '' ? 'upload' : name.slice(0, MAX_FILENAME_LENGTH);
}

export function describeUpload(form: UploadForm): NewFile {
  return {
    filename: filenameOf(form),
    purpose: purposeOf(form.fields),
    expiresAfterSeconds: expiryOf(form.fields),
  };
}

/**
 * `POST /v1/files`: a multipart form streamed into the catalog as it arrives, held to FILES_MAX_BYTES and
 * FILES_MAX_LINES, within FILES_UPLOAD_TIMEOUT_MS. A refused upload leaves nothing (the catalog removes
 * what was written); fields that come before the file are checked before a byte of it is stored.
 */
@Injectable()
export class FileUploads {
  constructor(
    @Inject(RedisFileCatalog) private readonly catalog: RedisFileCatalog,
    @Inject(GatewayConfig) private readonly config: GatewayConfig,
  ) {}

  receive(request: FastifyRequest, ownerKeyId: string): Promise<FileObject> {
    // The upload has a deadline of its own, longer than a JSON body's.
    endBodyDeadline(request);
    return readMultipartUpload(
      request.raw,
      {
        maxBytes: this.config.filesMaxBytes,
        maxLines: this.config.filesMaxLines,
        timeoutMs: this.config.filesUploadTimeoutMs,
        checkEarly: (fields) => {
          if (fields.has('purpose')) purposeOf(fields);
          if (fields.has('expires_after[anchor]') && fields.has('expires_after[seconds]')) expiryOf(fields);
        },
      },
      (content, form) => this.catalog.store(ownerKeyId, content, async () => describeUpload(await form)),
    );
  }
}
