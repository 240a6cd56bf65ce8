import { estimateImageTokens, tileTokens } from './image-tokens.estimate';

/** A PNG's first 24 bytes (signature, IHDR) with the given size, then `rest` bytes of payload. */
function pngDataUrl(width: number, height: number, rest = 100): string {
  const head = Buffer.alloc(24 + rest);
  Buffer.from('89504e470d0a1a0a', 'hex').copy(head, 0);
  head.writeUInt32BE(13, 8);
  head.write('IHDR', 12, 'latin1');
  head.writeUInt32BE(width, 16);
  head.writeUInt32BE(height, 20);
  return `data:image/png;base64,${head.toString('base64')}`;
}

function gifDataUrl(width: number, height: number): string {
  const head = Buffer.alloc(64);
  head.write('GIF89a', 0, 'latin1');
  head.writeUInt16LE(width, 6);
  head.writeUInt16LE(height, 8);
  return `data:image/gif;base64,${head.toString('base64')}`;
}

/** A payload whose first bytes are no known header: `bytes` decoded bytes. */
function opaqueDataUrl(bytes: number): string {
  return `data:image/jpeg;base64,${Buffer.alloc(bytes, 7).toString('base64')}`;
}

describe('image token estimate', () => {
  it("follows OpenAI's high-detail rule: fitted into 2048², shorter side at most 768, 170 a tile", () => {
    expect(tileTokens({ width: 512, height: 512 })).toBe(85 + 170);
    expect(tileTokens({ width: 1024, height: 1024 })).toBe(85 + 170 * 4);
    expect(tileTokens({ width: 4096, height: 4096 })).toBe(85 + 170 * 4);
    // 2048 × 4096 → 1024 × 2048 → 768 × 1536: 2 × 3 tiles.
    expect(tileTokens({ width: 2048, height: 4096 })).toBe(85 + 170 * 6);
  });

  it('reads the size from a PNG or GIF header in a data URL', () => {
    expect(estimateImageTokens(pngDataUrl(100, 100))).toBe(85 + 170);
    expect(estimateImageTokens(pngDataUrl(2000, 1000))).toBe(85 + 170 * 6);
    expect(estimateImageTokens(gifDataUrl(600, 300))).toBe(85 + 170 * 2);
  });

  it('counts an image whose header tells no size by its decoded bytes, more bytes never fewer tokens', () => {
    const small = estimateImageTokens(opaqueDataUrl(10_000));
    const large = estimateImageTokens(opaqueDataUrl(400_000));
    // 10,000 bytes ≈ 200 × 200 pixels: one tile; 400,000 bytes ≈ 1265²: four tiles once brought to 768.
    expect(small).toBe(85 + 170);
    expect(large).toBe(85 + 170 * 4);
    expect(large).toBeGreaterThan(small);
  });

  it('counts 85 for detail low, and a URL it does not fetch as a 2048² image', () => {
    expect(estimateImageTokens(pngDataUrl(4000, 4000), 'low')).toBe(85);
    expect(estimateImageTokens('https://example.com/cat.png')).toBe(85 + 170 * 4);
    expect(estimateImageTokens(undefined)).toBe(85 + 170 * 4);
    expect(estimateImageTokens('data:image/png,not-base64')).toBe(85 + 170 * 4);
  });
});
