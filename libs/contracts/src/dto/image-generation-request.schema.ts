import { z } from 'zod';
import {
  boundedText,
  compiledOnUse,
  expectedError,
  modelIdText,
  userText,
  validateFields,
} from '../validation/field-refusal';
import { MODEL_REQUEST_LIMITS } from './model-request.dto';

export const IMAGE_SIZES = ['256x256', '512x512', '1024x1024', '1792x1024', '1024x1792'] as const;
export type ImageSize = (typeof IMAGE_SIZES)[number];
export const IMAGE_RESPONSE_FORMATS = ['b64_json'] as const;

/** Bounds from the spec's image table; defaults are our choice where the spec says "not shown". */
export const IMAGE_LIMITS = {
  prompt: { min: 1, max: 4000 },
  n: { min: 1, max: 10, default: 1 },
  size: { default: '1024x1024' as ImageSize },
  ...MODEL_REQUEST_LIMITS,
} as const;

export function parseImageSize(size: ImageSize): { width: number; height: number } {
  const [width, height] = size.split('x').map(Number) as [number, number];
  return { width, height };
}

const { prompt, n, size } = IMAGE_LIMITS;

const nError = expectedError(`an integer between ${n.min} and ${n.max}`);

/**
 * `POST /v1/images/generations` body; unknown fields are refused, as OpenAI does. A refusal names the first
 * offending field in this order.
 */
export const IMAGE_GENERATION_BODY = z
  .strictObject({
    prompt: boundedText(prompt, 'a non-empty prompt', `a prompt of at most ${prompt.max} characters`).meta({
      description: 'A text description of the desired images.',
      examples: ['a lighthouse at dusk'],
    }),
    n: z
      .int(nError)
      .min(n.min, nError)
      .max(n.max, nError)
      .nullish()
      .meta({ default: n.default, description: 'Number of images.' }),
    size: z
      .enum(IMAGE_SIZES, expectedError(`one of ${IMAGE_SIZES.join(', ')}`))
      .nullish()
      .meta({ default: size.default }),
    response_format: z
      .enum(IMAGE_RESPONSE_FORMATS, expectedError("'b64_json' (the only supported response format)"))
      .nullish()
      .meta({ default: 'b64_json', description: 'Images are returned inline as base64.' }),
    model: modelIdText()
      .nullish()
      .meta({
        description: 'ID of the image model to use; when omitted, the default image model.',
        examples: ['sim-image'],
      }),
    user: userText(),
  })
  .meta({ description: 'Unknown fields are refused (400).' });

/** A `POST /v1/images/generations` body as sent, checked. */
export type ImageGenerationBody = z.infer<typeof IMAGE_GENERATION_BODY>;

const IMAGE_GENERATION = compiledOnUse(IMAGE_GENERATION_BODY);
/** The body as another process of the deployment reads it: fields it does not know are left unread. */
const IMAGE_GENERATION_AS_READ = compiledOnUse(z.looseObject(IMAGE_GENERATION_BODY.shape));

/** A `POST /v1/images/generations` body checked as sent, on the plain object: the body, typed, or the 400. */
export function validateImageGenerationBody(body: unknown): ImageGenerationBody {
  return validateFields(IMAGE_GENERATION(), body);
}

/**
 * An image body another process wrote (a job's request, under `at`), checked as strictly as at the HTTP
 * edge except that fields this process does not know are ignored: a newer writer may add some.
 */
export function readImageGenerationBody(plain: unknown, at: string): ImageGenerationBody {
  return validateFields(IMAGE_GENERATION_AS_READ(), plain, at);
}
