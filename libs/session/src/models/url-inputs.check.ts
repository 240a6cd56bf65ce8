import {
  DEFAULT_URL_INPUT_POLICY,
  GatewayError,
  urlInputProblem,
  type ChatCompletionRequestDto,
  type ModelEntry,
  type UrlInputPolicy,
} from '@mgw/contracts';

/**
 * The front-end's name of a URL part of the chat job request (message `message`, content part `part`): the
 * field of its own request the URL came from, for the refusal's `param` and message.
 */
export type UrlPartNamer = (message: number, part: number) => string;

/** The chat completions request's own name of an image part's URL. */
export const chatUrlPartName: UrlPartNamer = (message, part) =>
  `messages[${message}].content[${part}].image_url.url`;

const WHAT_PASSES: Readonly<Record<UrlInputPolicy, string>> = {
  public: 'data: URLs and http(s) URLs of public hosts',
  any: 'data: URLs and http(s) URLs',
  none: 'data: URLs only',
};

/**
 * Refuses, before it is queued, a chat job request with a URL part that `model`'s catalog policy
 * (`urlInputs`, default `public`) does not let through to its upstream. Every chat front-end's request
 * reaches it as chat messages, after any expansion (stored turns, item references), so every URL the
 * upstream would see is checked, whichever route and part it came by; `name` gives the part's name in the
 * front-end's words. Nothing is resolved or fetched.
 */
export function checkUrlInputs(
  messages: ChatCompletionRequestDto['messages'],
  model: ModelEntry,
  name: UrlPartNamer = chatUrlPartName,
): void {
  const policy = model.urlInputs ?? DEFAULT_URL_INPUT_POLICY;
  for (let m = 0; m < messages.length; m++) {
    const content: unknown = messages[m]!.content;
    if (!Array.isArray(content)) continue;
    for (let p = 0; p < content.length; p++) {
      const part = content[p] as { type?: unknown; image_url?: { url?: unknown } };
      if (part.type !== 'image_url' || typeof part.image_url?.url !== 'string') continue;
      const problem = urlInputProblem(part.image_url.url, policy);
      if (problem === null) continue;
      const param = name(m, p);
      throw GatewayError.invalidRequest(
        `Invalid '${param}': ${problem}. Model '${model.id}' takes ${WHAT_PASSES[policy]} (its catalog's urlInputs is '${policy}').`,
        param,
        'invalid_image_url',
      );
    }
  }
}
