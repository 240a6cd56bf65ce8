import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type ChatInferenceRequest, countPromptTokens } from '@mgw/inference';
import { OpenAIChatBackend, toUpstreamChatRequest } from './openai-chat.backend';
import { catalogModel, chatInferenceRequest } from '@mgw/testing';

function chatRequest(overrides: Partial<ChatInferenceRequest> = {}): ChatInferenceRequest {
  return chatInferenceRequest({ messages: [{ role: 'user', content: 'Weather in Paris?' }], ...overrides });
}

describe('toUpstreamChatRequest', () => {
  it('sends a plain request without any of the tool, format or logprobs fields', () => {
    const request = chatRequest();
    expect(toUpstreamChatRequest(request, 'upstream-model')).toEqual({
      model: 'upstream-model',
      messages: request.messages,
      stream: true,
      stream_options: { include_usage: true },
    });
  });

  it('passes tools, tool_choice and parallel_tool_calls in OpenAI’s shape', () => {
    const parameters = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] };
    const body = toUpstreamChatRequest(
      chatRequest({
        tools: [
          { name: 'get_weather', description: 'Weather now', parameters, strict: true },
          { name: 'noop', parameters: { type: 'object', properties: {} }, strict: false },
        ],
        toolChoice: { type: 'function', name: 'get_weather' },
        parallelToolCalls: false,
      }),
      'm',
    );
    expect(body).toMatchObject({
      tools: [
        {
          type: 'function',
          function: { name: 'get_weather', description: 'Weather now', parameters, strict: true },
        },
        { type: 'function', function: { name: 'noop', parameters: { type: 'object', properties: {} } } },
      ],
      tool_choice: { type: 'function', function: { name: 'get_weather' } },
      parallel_tool_calls: false,
    });
    expect(
      toUpstreamChatRequest(
        chatRequest({
          tools: [{ name: 'f', parameters: {}, strict: false }],
          toolChoice: { type: 'required' },
        }),
        'm',
      ),
    ).toMatchObject({ tool_choice: 'required', parallel_tool_calls: true });
  });

  it('sends assistant tool calls and tool results in OpenAI’s wire shape', () => {
    const call = { id: 'call_1', type: 'function' as const, function: { name: 'f', arguments: '{"a":1}' } };
    const body = toUpstreamChatRequest(
      chatRequest({
        messages: [
          { role: 'user', content: 'Go' },
          { role: 'assistant', content: null, toolCalls: [call] },
          { role: 'tool', toolCallId: 'call_1', content: '42' },
        ],
      }),
      'm',
    ) as { messages: unknown[] };
    expect(body.messages).toEqual([
      { role: 'user', content: 'Go' },
      { role: 'assistant', content: null, tool_calls: [call] },
      { role: 'tool', content: '42', tool_call_id: 'call_1' },
    ]);
  });

  it('passes response_format and logprobs', () => {
    const schema = { type: 'object', properties: {} };
    expect(
      toUpstreamChatRequest(
        chatRequest({
          responseFormat: { type: 'json_schema', name: 'out', schema, strict: true, description: 'd' },
          logprobs: true,
          topLogprobs: 5,
        }),
        'm',
      ),
    ).toMatchObject({
      response_format: {
        type: 'json_schema',
        json_schema: { name: 'out', schema, strict: true, description: 'd' },
      },
      logprobs: true,
      top_logprobs: 5,
    });
    const body = toUpstreamChatRequest(
      chatRequest({ responseFormat: { type: 'json_object' }, logprobs: true }),
      'm',
    );
    expect(body).toMatchObject({ response_format: { type: 'json_object' }, logprobs: true });
    expect(body).not.toHaveProperty('top_logprobs');
  });
});

describe('OpenAIChatBackend.countPromptTokens', () => {
  it('estimates with o200k, tools included, and asks no upstream', async () => {
    let asked = 0;
    const upstream = createServer((_req, res) => {
      asked++;
      res.end();
    });
    await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
    const { port } = upstream.address() as AddressInfo;
    const backend = OpenAIChatBackend.fromCatalog(
      catalogModel('chat', { kind: 'openai', baseUrl: `http://127.0.0.1:${port}/v1` }, 'llama'),
      {
        simChatTtftMs: 0,
        simChatTokensPerS: 0,
        simImageLatencyMs: 0,
        concurrency: 1,
        environment: new Map(),
      },
    );
    try {
      const tools = [{ name: 'f', parameters: { type: 'object', properties: {} }, strict: false }];
      for (const request of [chatRequest(), chatRequest({ tools, toolChoice: { type: 'auto' } })]) {
        expect(await backend.countPromptTokens(request, new AbortController().signal)).toBe(
          countPromptTokens(request),
        );
      }
      expect(asked).toBe(0);
    } finally {
      await backend.close();
      await new Promise((resolve) => upstream.close(resolve));
    }
  });
});
