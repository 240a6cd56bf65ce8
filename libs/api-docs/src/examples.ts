import {
  capabilitiesOf,
  CHAT_MODEL_TYPE,
  IMAGE_MODEL_TYPE,
  type ChatCompletion,
  type ChatCompletionChunk,
  type ImagesResponse,
  type ModelList,
} from '@mgw/contracts';

/** Examples of the document, typed by the response types so they cannot drift from them. */

const ID = 'chatcmpl-3f1c9a0e5b7d4c2a8e6f1b0d9c7a5e3f';
const CREATED = 1_795_000_000;
const FINGERPRINT = 'fp_mgw_sim';

export const COMPLETION_EXAMPLE: ChatCompletion = {
  id: ID,
  object: 'chat.completion',
  created: CREATED,
  model: 'sim-chat',
  system_fingerprint: FINGERPRINT,
  choices: [
    {
      index: 0,
      message: { role: 'assistant', content: 'Hello, gateway!' },
      logprobs: null,
      finish_reason: 'stop',
    },
  ],
  usage: { prompt_tokens: 12, completion_tokens: 4, total_tokens: 16 },
};

const chunk = (choice: ChatCompletionChunk['choices'][number], usage?: ChatCompletionChunk['usage']) =>
  JSON.stringify({
    id: ID,
    object: 'chat.completion.chunk',
    created: CREATED,
    model: 'sim-chat',
    system_fingerprint: FINGERPRINT,
    choices: [choice],
    ...(usage && { usage }),
  } satisfies ChatCompletionChunk);

export const CHAT_STREAM_EXAMPLE = [
  chunk({ index: 0, delta: { role: 'assistant', content: 'Hello' }, logprobs: null, finish_reason: null }),
  chunk({ index: 0, delta: { content: ', gateway' }, logprobs: null, finish_reason: null }),
  chunk({ index: 0, delta: { content: '!' }, logprobs: null, finish_reason: null }),
  chunk(
    { index: 0, delta: {}, logprobs: null, finish_reason: 'stop' },
    { prompt_tokens: 12, completion_tokens: 3, total_tokens: 15 },
  ),
  '[DONE]',
]
  .map((data) => `data: ${data}\n\n`)
  .join('');

export const CHAT_STREAM_FORMAT = [
  'Server-sent events (`text/event-stream`); the headers are sent at once and each chunk as soon as it is generated.',
  'Each event is a `data:` line holding one `ChatCompletionChunk` as JSON (the `x-event-schema`), then a blank line.',
  'All chunks of a completion have the same `id`. Intermediate chunks carry `choices[].delta.content` (a text fragment;',
  'or `delta.tool_calls`) and `finish_reason` null. The final chunk has an empty `delta`, a non-null `finish_reason`',
  'and `usage`. The stream then ends with the line `data: [DONE]`.',
  'A failure after the stream started is sent as `data: {"error": {...}}` (the error shape) followed by `data: [DONE]`.',
  'Lines starting with `:` are keep-alive comments; ignore them.',
].join(' ');

export const IMAGES_EXAMPLE: ImagesResponse = {
  created: CREATED,
  data: [
    { b64_json: 'iVBORw0KGgoAAAANSUhEUgAAAQAAAAEACAIAAADTED8xAAAA…', revised_prompt: 'a lighthouse at dusk' },
  ],
};

export const MODEL_LIST_EXAMPLE = {
  object: 'list',
  data: [
    {
      id: 'sim-chat',
      object: 'model',
      created: CREATED,
      owned_by: 'model-gateway',
      type: CHAT_MODEL_TYPE,
      capabilities: capabilitiesOf(CHAT_MODEL_TYPE),
      supported_parameters: ['temperature', 'top_p', 'n', 'max_tokens', 'stop', 'seed'],
    },
    {
      id: 'sim-image',
      object: 'model',
      created: CREATED,
      owned_by: 'model-gateway',
      type: IMAGE_MODEL_TYPE,
      capabilities: capabilitiesOf(IMAGE_MODEL_TYPE),
    },
  ],
} satisfies ModelList;
