import { setTimeout as sleep } from 'node:timers/promises';
import sharp from 'sharp';
import type { CatalogModel } from '@mgw/config';
import {
  type BackendSettings,
  BoundedCache,
  fnv1a32,
  type GeneratedImage,
  type ImageBackend,
  type ImageInferenceRequest,
  SeededRandom,
} from '@mgw/inference';
import { parseImageSimulatorOptions, type ImageSimulatorOptions } from './simulator.options';

const CHANNELS = 3;
/**
 * Bound once: a global lookup inside the per-pixel loop is free in plain Node but slow under a vm-sandboxed
 * global (jest), where it would dominate the painting of a frame.
 */
const sqrt = Math.sqrt;

/** HSL → RGB bytes; hue in turns [0, 1). */
function hslToRgb(hue: number, saturation: number, lightness: number): [number, number, number] {
  const chroma = (1 - Math.abs(2 * lightness - 1)) * saturation;
  const h = (((hue % 1) + 1) % 1) * 6;
  const x = chroma * (1 - Math.abs((h % 2) - 1));
  const [r, g, b] =
    h < 1
      ? [chroma, x, 0]
      : h < 2
        ? [x, chroma, 0]
        : h < 3
          ? [0, chroma, x]
          : h < 4
            ? [0, x, chroma]
            : h < 5
              ? [x, 0, chroma]
              : [chroma, 0, x];
  const m = lightness - chroma / 2;
  return [Math.round((r + m) * 255), Math.round((g + m) * 255), Math.round((b + m) * 255)];
}

/**
 * Paints a deterministic picture for (prompt, index) into raw RGB: a two-hue linear gradient, concentric
 * rings that shade it, and a checkered tile. All per-pixel work is table lookups plus one sqrt, so a
 * 1024×1024 frame costs a few milliseconds and PNG encoding dominates.
 */
export function paintSimulatedImage(prompt: string, index: number, width: number, height: number): Buffer {
  const random = new SeededRandom(fnv1a32(`${index}\u0000${prompt}`));
  const hueA = random.next();
  const hueB = hueA + 0.2 + random.next() * 0.4;
  const saturation = 0.55 + random.next() * 0.35;

  // 256 gradient steps, each in a light and a ring-shaded variant.
  const palette = new Uint8Array(2 * 256 * CHANNELS);
  for (let step = 0; step < 256; step++) {
    const t = step / 255;
    const hue = hueA + (hueB - hueA) * t;
    const lightness = 0.35 + 0.3 * t;
    const light = hslToRgb(hue, saturation, lightness);
    const dark = hslToRgb(hue, saturation, lightness * 0.72);
    palette.set(light, step * CHANNELS);
    palette.set(dark, (256 + step) * CHANNELS);
  }

  const angle = random.next() * 2 * Math.PI;
  const cos = Math.cos(angle);
  const sin = Math.sin(angle);
  // Project the corners on the gradient axis so the full palette spans the image whatever the angle.
  const projections = [0, (width - 1) * cos, (height - 1) * sin, (width - 1) * cos + (height - 1) * sin];
  const low = Math.min(...projections);
  const span = Math.max(...projections) - low || 1;
  const scale = 255 / span;
  const columnTerm = new Float64Array(width);
  for (let x = 0; x < width; x++) columnTerm[x] = x * cos * scale;

  const shortSide = Math.min(width, height);
  const centreX = width * (0.2 + random.next() * 0.6);
  const centreY = height * (0.2 + random.next() * 0.6);
  const ringPeriod = Math.max(4, (shortSide / 256) * (10 + random.next() * 22));
  const inverseRingPeriod = 1 / ringPeriod;
  const dx2 = new Float64Array(width);
  for (let x = 0; x < width; x++) dx2[x] = (x - centreX) * (x - centreX);

  const tileShift = 3 + random.nextInt(3);
  const tileSize = Math.max(1 << tileShift, Math.floor(shortSide * (0.2 + random.next() * 0.15)));
  const tileX0 = random.nextInt(Math.max(1, width - tileSize));
  const tileY0 = random.nextInt(Math.max(1, height - tileSize));
  const tileX1 = Math.min(width, tileX0 + tileSize);
  const tileY1 = Math.min(height, tileY0 + tileSize);
  const tileA = hslToRgb(hueB + 0.5, saturation, 0.85);
  const tileB = hslToRgb(hueA + 0.5, saturation, 0.2);

  const pixels = Buffer.allocUnsafe(width * height * CHANNELS);
  let offset = 0;
  for (let y = 0; y < height; y++) {
    const rowTerm = (y * sin - low) * scale;
    const dy2 = (y - centreY) * (y - centreY);
    const inTileRow = y >= tileY0 && y < tileY1;
    for (let x = 0; x < width; x++) {
      if (inTileRow && x >= tileX0 && x < tileX1) {
        const colour = (((x - tileX0) >> tileShift) ^ ((y - tileY0) >> tileShift)) & 1 ? tileA : tileB;
        pixels[offset] = colour[0];
        pixels[offset + 1] = colour[1];
        pixels[offset + 2] = colour[2];
      } else {
        let step = (columnTerm[x]! + rowTerm) | 0;
        step = step < 0 ? 0 : step > 255 ? 255 : step;
        const ring = (sqrt(dx2[x]! + dy2) * inverseRingPeriod) & 1;
        const source = (ring * 256 + step) * CHANNELS;
        pixels[offset] = palette[source]!;
        pixels[offset + 1] = palette[source + 1]!;
        pixels[offset + 2] = palette[source + 2]!;
      }
      offset += CHANNELS;
    }
  }
  return pixels;
}

export async function renderSimulatedPng(
  prompt: string,
  index: number,
  width: number,
  height: number,
): Promise<Buffer> {
  const raw = paintSimulatedImage(prompt, index, width, height);
  // Unfiltered rows keep deflate's input simple: encoding stays cheap and the files stay small
  // because the picture is made of flat runs.
  return sharp(raw, { raw: { width, height, channels: CHANNELS } })
    .png({ compressionLevel: 6, adaptiveFiltering: false })
    .toBuffer();
}

/**
 * Rendered images by (size, index, prompt). The picture is a pure function of those, so a repeated request
 * costs what a zero-latency model would — nothing — instead of ~25 ms of painting and deflate; concurrent
 * identical requests share one render. 16 entries of at most a few hundred KB each.
 */
const renderCache = new BoundedCache<Promise<Buffer>>(16, 4096);

function renderCached(prompt: string, index: number, width: number, height: number): Promise<Buffer> {
  const key = `${width}x${height}:${index}:${prompt}`;
  const render = renderCache.getOrCompute(key, () => renderSimulatedPng(prompt, index, width, height));
  render.catch(() => renderCache.delete(key));
  return render;
}

/** What an image model would "revise" the prompt into; here only whitespace is normalised. */
export function revisePrompt(prompt: string): string {
  return prompt.replace(/\s+/g, ' ').trim();
}

/**
 * An image model simulator for demos, tests and load tests: after `latencyMs` per image, a real PNG of
 * the requested size that is deterministic in (prompt, index). Abort: waits are cut short and the
 * generator throws `signal.reason`; an encode already running finishes but its image is not yielded.
 */
export class ImageSimulatorBackend implements ImageBackend {
  constructor(private readonly options: ImageSimulatorOptions) {}

  /** `this: void`: the backend factory keeps this function in a map and calls it unbound. */
  static fromCatalog(this: void, model: CatalogModel, settings: BackendSettings): ImageSimulatorBackend {
    return new ImageSimulatorBackend(parseImageSimulatorOptions(model, settings));
  }

  async *generate(request: ImageInferenceRequest, signal: AbortSignal): AsyncGenerator<GeneratedImage> {
    signal.throwIfAborted();
    const revisedPrompt = revisePrompt(request.prompt);
    for (let index = 0; index < request.n; index++) {
      if (this.options.latencyMs > 0) {
        try {
          await sleep(this.options.latencyMs, undefined, { signal });
        } catch (error) {
          signal.throwIfAborted();
          throw error;
        }
      }
      const png = await renderCached(request.prompt, index, request.width, request.height);
      signal.throwIfAborted();
      yield { index, png, revisedPrompt };
    }
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}
