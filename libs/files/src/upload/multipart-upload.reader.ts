import Busboy, { type BusboyHeaders, type BusboyInstance } from '@fastify/busboy';
import type { IncomingMessage } from 'node:http';
import { pipeline, type Readable } from 'node:stream';
import { FileErrors } from '../file.errors';
import { UploadMeter, type UploadLimits } from './upload.meter';

/** The form around the file: its fields (the first of each name) and the file part's filename. */
export interface UploadForm {
  filename: string;
  fields: ReadonlyMap<string, string>;
}

export interface MultipartUploadOptions extends UploadLimits {
  /** The whole body must have arrived within this long. */
  timeoutMs: number;
  /** Checks the fields read so far when the file part begins; a throw refuses the upload before any byte is stored. */
  checkEarly?: (fields: ReadonlyMap<string, string>) => void;
}

/** What a form may carry besides the file: a few short fields (`purpose`, `expires_after[…]`). */
const FORM_LIMITS = { fields: 8, fieldNameSize: 64, fieldSize: 1024, files: 1, parts: 16, headerPairs: 32 };

const noop = (): void => undefined;
const asError = (error: unknown): Error => (error instanceof Error ? error : new Error(String(error)));

/**
 * Reads a multipart upload from the request as it arrives: its `file` part goes to `store` at once, as a
 * stream held to the limits (`UploadMeter`), with the form (fields and filename) as a promise that settles
 * when the whole body is read, so `store` may start writing before it knows the `purpose` that follows the
 * file. Resolves to what `store` resolves to once the body is read; rejects with the first failure (the
 * body's, the limits', the deadline's or the store's), after `store` has settled (its cleanup done).
 */
export function readMultipartUpload<T>(
  request: IncomingMessage,
  options: MultipartUploadOptions,
  store: (content: Readable, form: Promise<UploadForm>) => Promise<T>,
): Promise<T> {
  let parser: BusboyInstance;
  try {
    parser = Busboy({
      headers: request.headers as BusboyHeaders,
      limits: { ...FORM_LIMITS, fileSize: options.maxBytes + 1 },
    });
  } catch (error) {
    return Promise.reject(FileErrors.malformed(error instanceof Error ? error.message : String(error)));
  }
  return new Promise<T>((resolve, reject) => {
    const fields = new Map<string, string>();
    let filename = '';
    let upload: Promise<T> | null = null;
    let settled = false;
    let settleForm!: { resolve: (form: UploadForm) => void; reject: (error: Error) => void };
    const form = new Promise<UploadForm>((resolveForm, rejectForm) => {
      settleForm = { resolve: resolveForm, reject: rejectForm };
    });
    form.catch(noop);

    const finish = (outcome: () => void): void => {
      if (settled) return;
      settled = true;
      clearTimeout(deadline);
      request.off('close', onClose);
      outcome();
    };
    const fail = (error: Error): void =>
      finish(() => {
        request.unpipe(parser);
        parser.on('error', noop);
        settleForm.reject(error);
        // Answered once the store has cleaned up, so nothing of the upload outlives the answer.
        if (upload === null) reject(error);
        else
          upload.then(
            () => reject(error),
            () => reject(error),
          );
      });
    const onClose = (): void => {
      if (!request.complete) fail(FileErrors.malformed('the client closed the connection mid-body'));
    };
    const deadline = setTimeout(() => fail(FileErrors.timedOut()), options.timeoutMs);

    parser.on('field', (name: string, value: string, _nameTruncated: boolean, valueTruncated: boolean) => {
      if (valueTruncated)
        return fail(FileErrors.invalidField(name, `at most ${FORM_LIMITS.fieldSize} bytes`));
      if (!fields.has(name)) fields.set(name, value);
    });
    parser.on('file', (name: string, part: Readable, partFilename: string | undefined) => {
      if (name !== 'file' || upload !== null || settled) {
        part.resume();
        return;
      }
      try {
        options.checkEarly?.(fields);
      } catch (error) {
        part.resume();
        return fail(asError(error));
      }
      filename = partFilename ?? '';
      const content = pipeline(part, new UploadMeter(options), noop);
      upload = store(content, form);
      upload.catch((error: unknown) => fail(asError(error)));
    });
    parser.on('finish', () => {
      if (settled) return;
      if (upload === null) return fail(FileErrors.missing('file'));
      const stored = upload;
      finish(() => {
        settleForm.resolve({ filename, fields });
        stored.then(resolve, reject);
      });
    });
    parser.on('error', (error: Error) => fail(FileErrors.malformed(error.message)));
    request.on('close', onClose);
    request.pipe(parser);
  });
}
