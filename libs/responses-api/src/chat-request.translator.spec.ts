import { GatewayError, REQUEST_SIZE_CEILINGS } from '@mgw/contracts';
import { RESPONSES_ORIGINS, toChatRequest } from './chat-request.translator';
import { validateResponsesRequest } from './responses-request.schema';
import type { ConversationItem } from './responses.types';
import { refusal } from '@mgw/testing';

const translate = (body: Record<string, unknown>, items?: ConversationItem[]) => {
  const request = validateResponsesRequest({ model: 'm', input: 'x', ...body });
  return toChatRequest(request, [], items ?? (request.input as ConversationItem[]), REQUEST_SIZE_CEILINGS);
};

describe('toChatRequest', () => {
  it('maps instructions, developer, function calls and their outputs to neutral messages', () => {
    const { request: chat } = translate({
      instructions: 'sys',
      input: [
        { role: 'developer', content: 'dev' },
        { role: 'user', content: [{ type: 'input_text', text: 'weather?' }] },
        { type: 'function_call', call_id: 'c1', name: 'weather', arguments: '{"city":"Oslo"}' },
        { type: 'function_call', call_id: 'c2', name: 'weather', arguments: '{"city":"Rome"}' },
        { type: 'function_call_output', call_id: 'c1', output: 'cold' },
        { type: 'function_call_output', call_id: 'c2', output: [{ type: 'input_text', text: 'warm' }] },
      ],
    });
    expect(JSON.parse(JSON.stringify(chat.messages))).toEqual([
      { role: 'system', content: 'sys' },
      { role: 'system', content: 'dev' },
      { role: 'user', content: 'weather?' },
      {
        role: 'assistant',
        content: null,
        toolCalls: [
          { id: 'c1', type: 'function', function: { name: 'weather', arguments: '{"city":"Oslo"}' } },
          { id: 'c2', type: 'function', function: { name: 'weather', arguments: '{"city":"Rome"}' } },
        ],
      },
      { role: 'tool', toolCallId: 'c1', content: 'cold' },
      { role: 'tool', toolCallId: 'c2', content: 'warm' },
    ]);
  });

  it('refuses a call without its output and an output for an unknown call, as OpenAI', () => {
    expect(
      refusal(() =>
        translate({ input: [{ type: 'function_call', call_id: 'c1', name: 'f', arguments: '{}' }] }),
      ).message,
    ).toBe('No tool output found for function call c1.');
    expect(
      refusal(() => translate({ input: [{ type: 'function_call_output', call_id: 'zz', output: 'x' }] }))
        .message,
    ).toBe('No tool call found for function call output with call_id zz.');
  });

  it('passes function tools (namespaces flattened, $schema dropped), tool_choice and text.format', () => {
    const { request: chat } = translate({
      tools: [
        {
          type: 'function',
          name: 'f',
          strict: true,
          parameters: { $schema: 'http://json-schema.org/draft-07/schema#', type: 'object', properties: {} },
        },
        { type: 'namespace', name: 'ns', tools: [{ type: 'function', name: 'g' }] },
        { type: 'web_search' },
      ],
      tool_choice: { type: 'function', name: 'f' },
      text: {
        format: {
          type: 'json_schema',
          name: 'out',
          strict: true,
          schema: {
            type: 'object',
            properties: { a: { type: 'string' } },
            required: ['a'],
            additionalProperties: false,
          },
        },
      },
      max_output_tokens: 100,
    });
    expect(chat.tools.map((tool) => tool.name)).toEqual(['f', 'g']);
    expect(chat.tools[0]).toEqual({
      name: 'f',
      parameters: { type: 'object', properties: {} },
      strict: true,
    });
    expect(chat.toolChoice).toEqual({ type: 'function', name: 'f' });
    expect(chat.responseFormat).toMatchObject({ type: 'json_schema', name: 'out', strict: true });
    expect(chat.maxTokens).toBe(100);
  });

  it("names the Responses field in the chat request's refusals", () => {
    const error = refusal(() =>
      translate({ tools: [{ type: 'web_search' }, { type: 'function', name: 'bad name!' }] }),
    );
    expect(error.param).toMatch(/^tools\[1\]/);
    const schema = refusal(() =>
      translate({ text: { format: { type: 'json_schema', name: 'x', schema: { type: 'nonsense' } } } }),
    );
    expect(schema.param).toMatch(/^text\.format/);
  });

  it("names the Responses field in a backend's refusal of the request, by its origins", () => {
    const { origins } = translate({});
    const backend = GatewayError.invalidRequest(
      'The model `m` accepts text only; messages[0].content has an image part.',
      'messages[0].content',
      'unsupported_content',
    );
    expect(origins.told(backend)).toMatchObject({
      status: 400,
      param: 'input',
      code: 'unsupported_content',
      message: 'The model `m` accepts text only; input has an image part.',
    });
    const unrelated = GatewayError.invalidRequest('no such model', 'model');
    expect(origins.told(unrelated)).toBe(unrelated);
    // A stream resumed from its replies alone knows no request: a tool is named as `tools`.
    const tool = GatewayError.invalidRequest(
      "Invalid 'tools[2].function.parameters': bad.",
      'tools[2].function.parameters',
    );
    expect(RESPONSES_ORIGINS.told(tool)).toMatchObject({ param: 'tools', message: "Invalid 'tools': bad." });
  });
});
