import { ApiError, errorOf, errorOfResponse, send } from './api.client';
import { readSseData } from './sse.reader';

export interface ChatMessage {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

export interface ChatRequest {
  model: string;
  messages: ChatMessage[];
  temperature?: number;
  max_tokens?: number;
  n?: number;
}

export interface ChatUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

/** How a stream went, measured in the page: what a caller of the API would see. */
export interface ChatStreamResult {
  outcome: 'done' | 'stopped';
  /** Send to the first content chunk, ms (null: nothing arrived). */
  ttftMs: number | null;
  /** Completion tokens per second after the first one (usage if the stream reported it, else chunks). */
  tokensPerSecond: number | null;
  usage: ChatUsage | null;
  finishReasons: (string | null)[];
}

interface ChunkChoice {
  index?: number;
  delta?: { content?: string | null };
  finish_reason?: string | null;
}

interface Chunk {
  choices?: ChunkChoice[];
  usage?: ChatUsage | null;
}

/** The body as it goes on the wire: streamed, with the final usage chunk asked for. */
export function streamingBody(request: ChatRequest): Record<string, unknown> {
  return { ...request, stream: true, stream_options: { include_usage: true } };
}

/**
 * Streams one chat completion with `fetch` and a reader of its SSE body, calling `onDelta` for every
 * piece of text as it arrives. Aborting `signal` ends the fetch: the gateway sees its client leave and
 * cancels the worker's job. Errors (an HTTP error, or an error event inside the stream) throw `ApiError`.
 */
export async function runChatStream(
  token: string,
  request: ChatRequest,
  signal: AbortSignal,
  onDelta: (choice: number, text: string) => void,
): Promise<ChatStreamResult> {
  const sentAt = performance.now();
  let firstAt: number | null = null;
  let lastAt: number | null = null;
  let chunks = 0;
  let usage: ChatUsage | null = null;
  const finishReasons: (string | null)[] = [];
  const result = (outcome: ChatStreamResult['outcome']): ChatStreamResult => {
    const completion = usage?.completion_tokens ?? chunks;
    const seconds = firstAt !== null && lastAt !== null ? (lastAt - firstAt) / 1000 : 0;
    return {
      outcome,
      ttftMs: firstAt === null ? null : firstAt - sentAt,
      tokensPerSecond: seconds > 0 && completion > 1 ? (completion - 1) / seconds : null,
      usage,
      finishReasons,
    };
  };
  try {
    const response = await send('/v1/chat/completions', {
      token,
      method: 'POST',
      body: streamingBody(request),
      signal,
      // Stop means stop: the playground never resumes, so its job ends when the fetch is aborted, also
      // for a model whose catalog makes its streams resumable by default.
      headers: { 'x-stream-resume': 'off' },
    });
    if (!response.ok) throw await errorOfResponse(response);
    if (!response.body) throw new ApiError(response.status, 'The answer had no body.', null, null);
    for await (const data of readSseData(response.body)) {
      if (data === '[DONE]') return result('done');
      const chunk = JSON.parse(data) as Chunk;
      const error = errorOf(response.status, chunk);
      if (error) throw error;
      if (chunk.usage) usage = chunk.usage;
      for (const choice of chunk.choices ?? []) {
        const index = choice.index ?? 0;
        const text = choice.delta?.content;
        if (text) {
          const now = performance.now();
          firstAt ??= now;
          lastAt = now;
          chunks += 1;
          onDelta(index, text);
        }
        if (choice.finish_reason) finishReasons[index] = choice.finish_reason;
      }
    }
    throw new ApiError(response.status, 'The stream ended before [DONE].', null, null);
  } catch (error) {
    if (signal.aborted) return result('stopped');
    throw error;
  }
}
