import type { CatalogModel } from '@mgw/config';
import {
  type BackendSettings,
  type ChatBackend,
  type ChatInferenceEvent,
  type ChatInferenceRequest,
  countPromptTokensInSlices,
  type InferenceMessage,
  promptPrefixKey,
  type ResponseFormat,
  TimeSlicer,
  type ToolChoice,
  type ToolDefinition,
  type UpstreamPool,
} from '@mgw/inference';
import { ChatStreamReader } from './chat-stream.reader';
import type { OpenAIUpstreamClient } from './openai-upstream.client';
import { PooledUpstreams } from './pooled-upstreams';
import { parseOpenAIBackendOptions, type OpenAIBackendOptions } from './openai.options';
import { readServerSentEvents } from './server-sent-events.reader';

/** A message in OpenAI's wire shape; messages outside a tool loop are sent as they are. */
function toUpstreamMessage(message: InferenceMessage): object {
  if (message.role === 'tool') {
    return { role: 'tool', content: message.content, tool_call_id: message.toolCallId };
  }
  if (message.role === 'assistant' && message.toolCalls !== undefined) {
    const { toolCalls, ...rest } = message;
    return { ...rest, tool_calls: toolCalls };
  }
  return message;
}

const toUpstreamTool = (tool: ToolDefinition): object => ({
  type: 'function',
  function: {
    name: tool.name,
    ...(tool.description !== undefined && { description: tool.description }),
    parameters: tool.parameters,
    ...(tool.strict && { strict: true }),
  },
});

function toUpstreamToolChoice(choice: ToolChoice): unknown {
  return choice.type === 'function' ? { type: 'function', function: { name: choice.name } } : choice.type;
}

function toUpstreamResponseFormat(format: ResponseFormat): object {
  if (format.type !== 'json_schema') return { type: format.type };
  const { name, schema, strict, description } = format;
  return {
    type: 'json_schema',
    json_schema: { name, schema, strict, ...(description !== undefined && { description }) },
  };
}

/**
 * The upstream request for ours. Sampling parameters at OpenAI's defaults are left out, so that the
 * upstream's own defaults for its model (vLLM's generation config, an Ollama Modelfile) apply as they
 * would for a client talking to it directly.
 */
export function toUpstreamChatRequest(request: ChatInferenceRequest, upstreamModel: string): object {
  return {
    model: upstreamModel,
    messages: request.messages.map(toUpstreamMessage),
    // Always streamed, also for our non-streaming clients: the worker relays deltas to the gateway anyway.
    stream: true,
    stream_options: { include_usage: true },
    ...(request.n !== 1 && { n: request.n }),
    ...(request.maxTokens !== null && { max_tokens: request.maxTokens }),
    ...(request.stop.length > 0 && { stop: request.stop }),
    ...(request.temperature !== 1 && { temperature: request.temperature }),
    ...(request.topP !== 1 && { top_p: request.topP }),
    ...(request.presencePenalty !== 0 && { presence_penalty: request.presencePenalty }),
    ...(request.frequencyPenalty !== 0 && { frequency_penalty: request.frequencyPenalty }),
    ...(request.seed !== null && { seed: request.seed }),
    ...(request.user !== null && { user: request.user }),
    // Tool fields only with tools: some servers refuse tool_choice or parallel_tool_calls without them.
    ...(request.tools.length > 0 && {
      tools: request.tools.map(toUpstreamTool),
      tool_choice: toUpstreamToolChoice(request.toolChoice),
      parallel_tool_calls: request.parallelToolCalls,
    }),
    ...(request.responseFormat.type !== 'text' && {
      response_format: toUpstreamResponseFormat(request.responseFormat),
    }),
    ...(request.logprobs && { logprobs: true }),
    ...(request.logprobs && request.topLogprobs > 0 && { top_logprobs: request.topLogprobs }),
    // Parameters the gateway admitted for this backend only (contracts' backend-parameters.ts), relayed as sent.
    ...request.relayedParameters,
  };
}

const isJson = (contentType: string | string[] | undefined): boolean =>
  /^application\/json\b/i.test(String(contentType ?? ''));

/**
 * Chat through OpenAI-compatible upstreams: POST /chat/completions with `stream: true`, relayed event by
 * event as the upstream sends them (one upstream content chunk → one delta, one tool-call piece → one
 * tool-call event, logprobs on the delta they came with). Abort closes the upstream
 * connection, so the upstream stops generating as well. Which upstream, and another one when it fails
 * before the first event, is the pool's choice (pool/upstream-pool.ts).
 */
export class OpenAIChatBackend implements ChatBackend {
  private readonly upstreams: PooledUpstreams;

  constructor(options: OpenAIBackendOptions, model: string) {
    this.upstreams = new PooledUpstreams(options, model);
  }

  get upstreamPool(): UpstreamPool {
    return this.upstreams.pool;
  }

  /** `this: void`: the backend factory keeps this function in a map and calls it unbound. */
  static fromCatalog(this: void, model: CatalogModel, settings: BackendSettings): OpenAIChatBackend {
    return new OpenAIChatBackend(parseOpenAIBackendOptions(model, settings), model.id);
  }

  generate(request: ChatInferenceRequest, signal: AbortSignal): AsyncGenerator<ChatInferenceEvent> {
    const pool = this.upstreams.pool;
    const prefixKey = pool.routesByPrefix ? promptPrefixKey(request, pool.settings.prefixMinTokens) : null;
    return this.upstreams.run(
      signal,
      (client, upstream, s) => this.attempt(client, upstream.upstreamModel, request, s),
      prefixKey,
    );
  }

  /**
   * An estimate: OpenAI-compatible servers have no standard way to count a chat prompt, so it is counted
   * here with o200k and OpenAI's message framing (the upstream's own count, in a generation's usage, may
   * differ). No upstream is asked.
   */
  async countPromptTokens(request: ChatInferenceRequest, signal: AbortSignal): Promise<number> {
    signal.throwIfAborted();
    return await countPromptTokensInSlices(request, new TimeSlicer(signal));
  }

  private async *attempt(
    client: OpenAIUpstreamClient,
    upstreamModel: string,
    request: ChatInferenceRequest,
    signal: AbortSignal,
  ): AsyncGenerator<ChatInferenceEvent> {
    signal.throwIfAborted();
    const response = await client.post(
      '/chat/completions',
      toUpstreamChatRequest(request, upstreamModel),
      'text/event-stream',
      signal,
    );
    const reader = new ChatStreamReader(request);
    try {
      if (isJson(response.headers['content-type'])) {
        yield* reader.readCompletion(await response.body.text());
      } else {
        // Read on past [DONE] to the end of the body, so its connection goes back to the pool.
        for await (const event of readServerSentEvents(response.body)) yield* reader.readEvent(event.data);
      }
    } catch (error) {
      // Past [DONE] the answer is complete; a connection failing then changes nothing for the client.
      if (!reader.ended || signal.aborted) throw client.failure(error, signal);
    } finally {
      // An unread (aborted or failed) body must not keep its pooled connection.
      if (!response.body.readableEnded) response.body.destroy();
    }
    yield* await reader.end(signal);
  }

  close(): Promise<void> {
    return this.upstreams.close();
  }
}
