import { validateChatRequest } from '@mgw/contracts';
import { chatRequestOfBody, type ChatRequest } from '@mgw/request';
import { estimateChatTokens, estimatePromptTokens, estimateToolAndSchemaTokens } from './token.estimate';

const request = (extra: Record<string, unknown> = {}): ChatRequest =>
  chatRequestOfBody(
    validateChatRequest({
      messages: [{ role: 'user', content: 'What is the weather in Paris today?' }],
      max_tokens: 10,
      ...extra,
    }),
  );

const tool = (description: string) => ({
  type: 'function',
  function: {
    name: 'get_weather',
    description,
    parameters: {
      type: 'object',
      properties: { city: { type: 'string', description: 'x'.repeat(400) } },
      required: ['city'],
    },
  },
});

describe('chat token estimate', () => {
  it('adds nothing for a request without tools or a schema', () => {
    expect(estimateToolAndSchemaTokens(request())).toBe(0);
    expect(estimateChatTokens(request(), 100)).toBe(estimatePromptTokens(request().messages) + 10);
  });

  it('counts tool definitions, their descriptions and parameter schemas as prompt tokens', () => {
    const short = estimateChatTokens(request({ tools: [tool('d')] }), 100);
    const long = estimateChatTokens(request({ tools: [tool('d'.repeat(800))] }), 100);
    // The 400-character property description alone is about 100 tokens.
    expect(short).toBeGreaterThan(estimateChatTokens(request(), 100) + 100);
    expect(long - short).toBeGreaterThanOrEqual(199);
  });

  it('counts a json_schema response format', () => {
    const schema = {
      type: 'object',
      properties: { answer: { type: 'string', description: 'y'.repeat(400) } },
    };
    const withSchema = request({
      response_format: { type: 'json_schema', json_schema: { name: 'a', schema } },
    });
    expect(estimateToolAndSchemaTokens(withSchema)).toBeGreaterThan(100);
    expect(estimateToolAndSchemaTokens(request({ response_format: { type: 'json_object' } }))).toBe(0);
  });

  it("counts the tool calls an assistant message echoes back, and a tool message's result", () => {
    const args = JSON.stringify({ city: 'P'.repeat(400) });
    const messages = [
      { role: 'user', content: 'Weather?' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'c1', type: 'function', function: { name: 'w', arguments: args } }],
      },
      { role: 'tool', tool_call_id: 'c1', content: 'z'.repeat(400) },
    ];
    const { messages: parsed } = request({ messages });
    // Arguments (~100) and the tool result (~100) on top of the framing of three messages.
    expect(estimatePromptTokens(parsed)).toBeGreaterThan(200);
  });

  it('counts an image part by its size, not a flat figure', () => {
    const image = (bytes: number) => ({
      type: 'image_url',
      image_url: { url: `data:image/jpeg;base64,${Buffer.alloc(bytes, 7).toString('base64')}` },
    });
    const prompt = (bytes: number) =>
      estimatePromptTokens(request({ messages: [{ role: 'user', content: [image(bytes)] }] }).messages);
    expect(prompt(1000)).toBe(4 + 85 + 170);
    expect(prompt(4_000_000)).toBe(4 + 85 + 170 * 4);
  });
});
