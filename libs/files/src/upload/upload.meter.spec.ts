import { Readable } from 'node:stream';
import { Writable } from 'node:stream';
import { text } from 'node:stream/consumers';
import { pipeline } from 'node:stream/promises';
import { refusal, refusalOf } from '@mgw/testing';
import { describeUpload } from './file-upload.service';
import { UploadMeter } from './upload.meter';

/** Runs `chunks` through a meter; answers what passed, or rejects with the meter's error. */
async function metered(chunks: string[], maxBytes: number, maxLines: number): Promise<string> {
  const passed: Buffer[] = [];
  await pipeline(
    Readable.from(chunks.map((c) => Buffer.from(c))),
    new UploadMeter({ maxBytes, maxLines }),
    new Writable({
      write(chunk: Buffer, _encoding, done) {
        passed.push(chunk);
        done();
      },
    }),
  );
  return Buffer.concat(passed).toString();
}

describe('UploadMeter', () => {
  it('passes a file within its limits through unchanged, counting a last line without a newline', async () => {
    expect(await metered(['{"a":1}\n{"b"', ':2}\n', '{"c":3}'], 100, 3)).toBe('{"a":1}\n{"b":2}\n{"c":3}');
    expect(await text(Readable.from([]).pipe(new UploadMeter({ maxBytes: 1, maxLines: 1 })))).toBe('');
  });

  it('refuses the byte past the byte limit with a 413, and a line past the line limit with a 400', async () => {
    const tooLarge = await refusalOf(metered(['12345', '6'], 5, 10));
    expect(tooLarge).toMatchObject({ status: 413, code: 'file_too_large', param: 'file' });
    expect(await metered(['12345'], 5, 10)).toBe('12345');

    const tooLong = await refusalOf(metered(['a\nb\n', 'c'], 100, 2));
    expect(tooLong).toMatchObject({ status: 400, code: 'too_many_lines', param: 'file' });
    expect(await metered(['a\nb\n'], 100, 2)).toBe('a\nb\n');
  });
});

describe('describeUpload', () => {
  const form = (fields: Record<string, string>, filename = 'in.jsonl') => ({
    filename,
    fields: new Map(Object.entries(fields)),
  });

  it('reads the purpose, an expires_after, and a filename without its path', () => {
    expect(
      describeUpload(
        form(
          { purpose: 'batch', 'expires_after[anchor]': 'created_at', 'expires_after[seconds]': '3600' },
          'C:\\data\\in.jsonl',
        ),
      ),
    ).toEqual({ filename: 'in.jsonl', purpose: 'batch', expiresAfterSeconds: 3600 });
    expect(describeUpload(form({ purpose: 'batch' }, '')).filename).toBe('upload');
  });

  it('refuses what OpenAI refuses, naming the parameter', () => {
    const refused = (fields: Record<string, string>) => refusal(() => describeUpload(form(fields)));
    expect(refused({})).toMatchObject({ status: 400, param: 'purpose', code: 'missing_required_parameter' });
    expect(refused({ purpose: 'batch_output' }).message).toBe(
      "'batch_output' is not one of ['batch'] - 'purpose'",
    );
    expect(
      refused({ purpose: 'batch', 'expires_after[anchor]': 'created_at', 'expires_after[seconds]': '60' }),
    ).toMatchObject({ param: 'expires_after[seconds]' });
    expect(refused({ purpose: 'batch', 'expires_after[seconds]': '3600' })).toMatchObject({
      param: 'expires_after[anchor]',
    });
  });
});
