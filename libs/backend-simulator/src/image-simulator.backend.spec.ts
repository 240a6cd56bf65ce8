import sharp from 'sharp';
import type { GeneratedImage, ImageInferenceRequest } from '@mgw/inference';
import { ImageSimulatorBackend, renderSimulatedPng, revisePrompt } from './image-simulator.backend';

function imageRequest(overrides: Partial<ImageInferenceRequest> = {}): ImageInferenceRequest {
  return { prompt: 'A lighthouse at dusk', n: 1, width: 256, height: 256, user: null, ...overrides };
}

async function collect(
  request: ImageInferenceRequest,
  latencyMs = 0,
  signal = new AbortController().signal,
): Promise<GeneratedImage[]> {
  const images: GeneratedImage[] = [];
  for await (const image of new ImageSimulatorBackend({ latencyMs }).generate(request, signal))
    images.push(image);
  return images;
}

async function only(request: ImageInferenceRequest): Promise<GeneratedImage> {
  const [image] = await collect(request);
  if (image === undefined) throw new Error('no image');
  return image;
}

describe('ImageSimulatorBackend', () => {
  it.each([
    [256, 256],
    [1792, 1024],
    [1024, 1792],
  ])('produces a PNG of exactly %i×%i', async (width, height) => {
    const { png } = await only(imageRequest({ width, height }));
    const metadata = await sharp(png).metadata();
    expect(metadata).toMatchObject({ format: 'png', width, height });
  });

  it('is deterministic per prompt and differs across prompts', async () => {
    const a = await renderSimulatedPng('A lighthouse at dusk', 0, 256, 256);
    const b = await renderSimulatedPng('A lighthouse at dusk', 0, 256, 256);
    const c = await renderSimulatedPng('A lighthouse at dawn', 0, 256, 256);
    expect(a).not.toBe(b); // two renders, not one remembered
    expect(a.equals(b)).toBe(true);
    expect(a.equals(c)).toBe(false);
  });

  it('renders a repeated request once, and answers it with the same bytes', async () => {
    const request = imageRequest({ prompt: 'A lighthouse, cached' });
    const [first, again] = await Promise.all([only(request), only(request)]);
    const later = await only(request);
    expect(again.png).toBe(first.png);
    expect(later.png).toBe(first.png);
    expect(first.png.equals(await renderSimulatedPng(request.prompt, 0, 256, 256))).toBe(true);
    const otherSize = await only({ ...request, width: 512, height: 512 });
    expect(otherSize.png).not.toBe(first.png);
  });

  it('is not a single flat colour', async () => {
    const { png } = await only(imageRequest());
    const { channels } = await sharp(png).stats();
    expect(channels.some((channel) => channel.min !== channel.max)).toBe(true);
    expect(channels.every((channel) => channel.stdev > 5)).toBe(true);
  });

  it('yields n distinct images in index order with the revised prompt', async () => {
    const images = await collect(imageRequest({ n: 3, prompt: '  A   lighthouse\n at\tdusk  ' }));
    expect(images.map((image) => image.index)).toEqual([0, 1, 2]);
    expect(new Set(images.map((image) => image.png.toString('base64'))).size).toBe(3);
    for (const image of images) expect(image.revisedPrompt).toBe('A lighthouse at dusk');
  });

  it('collapses whitespace in the revised prompt', () => {
    expect(revisePrompt(' a \n\n b\t c ')).toBe('a b c');
  });

  it('waits latencyMs per image', async () => {
    const started = performance.now();
    await collect(imageRequest({ n: 2, width: 64, height: 64 }), 30);
    expect(performance.now() - started).toBeGreaterThanOrEqual(55);
  });

  it('cuts the latency short on abort and throws the abort reason', async () => {
    const controller = new AbortController();
    const reason = new Error('cancelled');
    const started = performance.now();
    const pending = collect(imageRequest({ n: 2 }), 10_000, controller.signal);
    setTimeout(() => controller.abort(reason), 20);
    await expect(pending).rejects.toBe(reason);
    // Without the abort this takes 20 s (two images of 10 s); half of one image's wait is a generous bound.
    expect(performance.now() - started).toBeLessThan(5_000);
  });

  it('renders 1024×1024 quickly', async () => {
    await only(imageRequest({ width: 1024, height: 1024, prompt: 'warm-up' }));
    const started = performance.now();
    await only(imageRequest({ width: 1024, height: 1024 }));
    // Typically ~20 ms; the bound only catches a pathological regression on a loaded CI machine.
    expect(performance.now() - started).toBeLessThan(2_000);
  });

  it('closes', async () => {
    await expect(new ImageSimulatorBackend({ latencyMs: 0 }).close()).resolves.toBeUndefined();
  });
});
