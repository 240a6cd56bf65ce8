import type { TokenLogprob, TopLogprob } from '@mgw/contracts';
import { fnv1a32 } from '@mgw/inference';

/** Plausible runners-up for `top_logprobs`; which ones, and in what order, follows the token's hash. */
const ALTERNATIVES: readonly string[] = (
  'the a to of and in is it that for on with as was this be at by not are from or have an they which ' +
  'you one were all we can her has there been if more when will would who so no'
).split(' ');

const hex = (byte: number) => `\\x${byte.toString(16).padStart(2, '0')}`;

/**
 * Log probabilities for one streamed piece of text that `tokens` tokens produced, starting at token
 * `position` of the choice. Deterministic: a function of the token text and its position only.
 *
 * The generated token always has the highest probability (between 0.5 and 0.99, so logprob in
 * [ln 0.5, 0)); `top_logprobs` lists it first, then `top - 1` other tokens whose probabilities halve
 * one after the other and sum to less than what is left, so the distribution stays a distribution. A
 * character split over several tokens gets OpenAI's `bytes:\xNN` names for the partial tokens.
 */
export function simulatedLogprobs(
  text: string,
  tokens: number,
  position: number,
  top: number,
): TokenLogprob[] {
  if (tokens <= 1) return [tokenLogprob(text, [...Buffer.from(text, 'utf8')], position, top)];
  const bytes = [...Buffer.from(text, 'utf8')];
  const size = Math.max(1, Math.ceil(bytes.length / tokens));
  return Array.from({ length: tokens }, (_, i) => {
    const part = bytes.slice(i * size, (i + 1) * size);
    return tokenLogprob(`bytes:${part.map(hex).join('')}`, part, position + i, top);
  });
}

function tokenLogprob(token: string, bytes: number[], position: number, top: number): TokenLogprob {
  const hash = fnv1a32(`${position}\u0000${token}`);
  const probability = 0.5 + 0.49 * (hash / 0x1_0000_0000);
  const logprob = Math.log(probability);
  const topLogprobs: TopLogprob[] = [];
  if (top > 0) topLogprobs.push({ token, logprob, bytes });
  const prefix = token.startsWith(' ') ? ' ' : '';
  let rest = (1 - probability) * 0.9;
  for (let offset = 0; topLogprobs.length < top && offset < ALTERNATIVES.length; offset++) {
    const alternative = `${prefix}${ALTERNATIVES[(hash + offset) % ALTERNATIVES.length]}`;
    if (alternative === token) continue;
    rest /= 2;
    topLogprobs.push({
      token: alternative,
      logprob: Math.log(rest),
      bytes: [...Buffer.from(alternative, 'utf8')],
    });
  }
  return { token, logprob, bytes, top_logprobs: topLogprobs };
}
