/** A low-detail image, and the base of every image (OpenAI's figures). */
const BASE_TOKENS = 85;
/** Per 512-pixel tile of a high-detail image. */
const TILE_TOKENS = 170;
const TILE = 512;
/** A high-detail image is first fitted into this square, then its shorter side brought down to SHORT_SIDE. */
const FIT = 2048;
const SHORT_SIDE = 768;
/**
 * Pixels assumed per byte of an image whose dimensions its first bytes do not tell: compressed photographs
 * carry about two bits per pixel, so this leans high (more tiles), as a reservation should.
 */
const PIXELS_PER_BYTE = 4;
/** An image behind a URL the gateway does not fetch: assumed as large as a high-detail image is counted. */
const UNKNOWN = { width: FIT, height: FIT };
const PNG_SIGNATURE = '89504e470d0a1a0a';

interface Size {
  width: number;
  height: number;
}

/** A high-detail image's tokens by OpenAI's rule: fitted, its shorter side at most 768, 170 per tile. */
export function tileTokens({ width, height }: Size): number {
  let w = Math.max(1, width);
  let h = Math.max(1, height);
  const fit = Math.min(1, FIT / Math.max(w, h));
  w *= fit;
  h *= fit;
  const short = Math.min(1, SHORT_SIDE / Math.min(w, h));
  w *= short;
  h *= short;
  return BASE_TOKENS + TILE_TOKENS * Math.ceil(w / TILE) * Math.ceil(h / TILE);
}

/** Width and height from a PNG's or a GIF's header (their first 24 bytes), or null. */
function headerSize(head: Buffer): Size | null {
  if (head.length >= 24 && head.subarray(0, 8).toString('hex') === PNG_SIGNATURE) {
    return { width: head.readUInt32BE(16), height: head.readUInt32BE(20) };
  }
  if (head.length >= 10 && head.subarray(0, 4).toString('latin1') === 'GIF8') {
    return { width: head.readUInt16LE(6), height: head.readUInt16LE(8) };
  }
  return null;
}

/** The decoded bytes of a base64 payload of `length` characters ending with `padding` `=`s. */
function decodedBytes(length: number, padding: number): number {
  return Math.max(0, Math.floor((length * 3) / 4) - padding);
}

/**
 * A guess, leaning high, of an image part's prompt tokens for a TPM reservation (the worker's count
 * replaces it): 85 for `detail: "low"`; otherwise OpenAI's high-detail rule applied to the image's size —
 * read from a PNG's or GIF's header in a `data:` URL (a few bytes decoded), else taken as a square of four
 * pixels per decoded byte, else (a URL the gateway does not fetch) as a 2048 × 2048 image.
 */
export function estimateImageTokens(url: string | undefined, detail?: string): number {
  if (detail === 'low') return BASE_TOKENS;
  if (url === undefined || !url.startsWith('data:')) return tileTokens(UNKNOWN);
  const comma = url.indexOf(',');
  if (comma < 0 || !url.slice(0, comma).endsWith(';base64')) return tileTokens(UNKNOWN);
  const size = headerSize(Buffer.from(url.slice(comma + 1, comma + 33), 'base64'));
  if (size !== null) return tileTokens(size);
  const padding = url.endsWith('==') ? 2 : url.endsWith('=') ? 1 : 0;
  const side = Math.sqrt(decodedBytes(url.length - comma - 1, padding) * PIXELS_PER_BYTE);
  return tileTokens({ width: side, height: side });
}
