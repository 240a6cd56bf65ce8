import {
  DEFAULT_URL_INPUT_POLICY,
  GatewayError,
  urlInputProblem,
  type ModelEntry,
  type UrlInputPolicy,
} from '@mgw/contracts';
import { type InferenceMessage } from '@mgw/request';

const WHAT_PASSES: Readonly<Record<UrlInputPolicy, string>> = {
  public: 'data: URLs and http(s) URLs of public hosts',
  any: 'data: URLs and http(s) URLs',
  none: 'data: URLs only',
};

/**
 * Refuses, before it is queued, a chat job request with a URL part that `model`'s catalog policy
 * (`urlInputs`, default `public`) does not let through to its upstream. Every chat front-end's request
 * reaches it as neutral messages, after any expansion (stored turns, item references), so every URL the
 * upstream would see is checked, whichever route and part it came by; the refusal names the part by its
 * neutral path (`messages[i].content[j].image_url.url`), which the session tells in the client's words.
 * Nothing is resolved or fetched.
 */
export function checkUrlInputs(messages: readonly InferenceMessage[], model: ModelEntry): void {
  const policy = model.urlInputs ?? DEFAULT_URL_INPUT_POLICY;
  for (let m = 0; m < messages.length; m++) {
    const content = messages[m]!.content;
    if (!Array.isArray(content)) continue;
    for (let p = 0; p < content.length; p++) {
      const part = content[p]!;
      if (part.type !== 'image_url') continue;
      const problem = urlInputProblem(part.image_url.url, policy);
      if (problem === null) continue;
      const param = `messages[${m}].content[${p}].image_url.url`;
      throw GatewayError.invalidRequest(
        `Invalid '${param}': ${problem}. Model '${model.id}' takes ${WHAT_PASSES[policy]} (its catalog's urlInputs is '${policy}').`,
        param,
        'invalid_image_url',
      );
    }
  }
}
