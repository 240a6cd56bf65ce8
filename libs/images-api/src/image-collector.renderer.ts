import {
  GatewayError,
  type ChatDoneMessage,
  type GeneratedImageData,
  type ImageDoneMessage,
  type ImageMessage,
  type ImagesResponse,
} from '@mgw/contracts';
import type { JsonRenderer } from '@mgw/session';

/**
 * An image generation's JSON answer: each image is fetched from its short-lived key as it is announced;
 * the answer is ready once all of them are.
 */
export class ImageCollectorRenderer implements JsonRenderer<ImagesResponse> {
  private readonly images: Promise<GeneratedImageData>[] = [];

  constructor(
    private readonly created: number,
    private readonly collect: (key: string, revisedPrompt: string) => Promise<GeneratedImageData>,
  ) {}

  /** An image answer has no text. */
  delta(): void {}

  toolCall(): void {}

  image(message: ImageMessage): void {
    const image = this.collect(message.key, message.revisedPrompt);
    // Failures surface when all images are awaited; this only prevents an unhandled rejection meanwhile.
    image.catch(() => undefined);
    this.images[message.index] = image;
  }

  async done(message: ChatDoneMessage | ImageDoneMessage): Promise<ImagesResponse> {
    const count = message.kind === 'image-done' ? message.count : 0;
    const { images } = this;
    if (images.length !== count || images.includes(undefined as never)) {
      throw GatewayError.workerFailed(`The worker reported ${count} images but sent ${images.length}.`);
    }
    return { created: this.created, data: await Promise.all(images) };
  }
}
