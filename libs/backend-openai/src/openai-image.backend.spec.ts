import { GatewayError } from '@mgw/contracts';
import { checkPng } from './openai-image.backend';

function png(width: number, height: number): Buffer {
  const header = Buffer.alloc(24);
  Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]).copy(header);
  header.writeUInt32BE(13, 8);
  header.write('IHDR', 12, 'latin1');
  header.writeUInt32BE(width, 16);
  header.writeUInt32BE(height, 20);
  return header;
}

function messageOf(run: () => void): string {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(GatewayError);
    expect((error as GatewayError).code).toBe('upstream_protocol_error');
    return (error as GatewayError).message;
  }
  throw new Error('expected a GatewayError');
}

describe('checkPng', () => {
  it('accepts a PNG of the requested size', () => {
    expect(() => checkPng(png(256, 512), 256, 512, 0)).not.toThrow();
  });

  it('names what came instead of a PNG', () => {
    expect(
      messageOf(() =>
        checkPng(Buffer.from([0xff, 0xd8, 0xff, 0xe0, ...new Array<number>(30).fill(0)]), 1, 1, 0),
      ),
    ).toBe('The upstream model server returned image 0 as JPEG data, not PNG.');
    expect(messageOf(() => checkPng(Buffer.from('RIFF\0\0\0\0WEBPVP8 and more bytes'), 1, 1, 2))).toContain(
      'image 2 as WebP data',
    );
    expect(messageOf(() => checkPng(Buffer.from('garbage'), 1, 1, 0))).toContain('unrecognised data');
  });

  it('refuses a PNG of another size', () => {
    expect(messageOf(() => checkPng(png(512, 512), 256, 256, 1))).toBe(
      'The upstream model server returned image 1 at 512x512 for a 256x256 request.',
    );
  });
});
