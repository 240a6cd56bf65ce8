import { Transform, type TransformCallback } from 'node:stream';
import { FileErrors } from '../file.errors';

const NEWLINE = 0x0a;

export interface UploadLimits {
  maxBytes: number;
  maxLines: number;
}

/**
 * Passes an upload's bytes through while counting them and its lines, and fails the stream as soon as either
 * passes its limit (413 for bytes, 400 for lines): the byte that is one too many is never stored.
 */
export class UploadMeter extends Transform {
  private bytes = 0;
  private newlines = 0;
  private endsLine = true;

  constructor(private readonly limits: UploadLimits) {
    super();
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    this.bytes += chunk.length;
    if (this.bytes > this.limits.maxBytes) return done(FileErrors.tooLarge(this.limits.maxBytes));
    if (chunk.length === 0) return done(null, chunk);
    let at = chunk.indexOf(NEWLINE);
    while (at !== -1) {
      this.newlines += 1;
      at = chunk.indexOf(NEWLINE, at + 1);
    }
    this.endsLine = chunk[chunk.length - 1] === NEWLINE;
    // A line has begun once any byte of it arrived, its newline or not.
    const lines = this.newlines + (this.endsLine ? 0 : 1);
    if (lines > this.limits.maxLines) return done(FileErrors.tooManyLines(this.limits.maxLines));
    done(null, chunk);
  }
}
