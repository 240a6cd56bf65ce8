import { GatewayError } from '@mgw/contracts';
import { validateCountTokensRequest, validateMessagesRequest } from './messages-request.schema';
import { refusal } from '@mgw/testing';

const valid = { model: 'sim-chat', max_tokens: 64, messages: [{ role: 'user', content: 'Hi' }] };

const tool = {
  name: 'get_weather',
  input_schema: { type: 'object', properties: { city: { type: 'string' } } },
};

describe('validateMessagesRequest', () => {
  it('accepts what Claude Code sends: system in messages, thinking, cache_control, defer_loading, $schema, context_management, output_config', () => {
    const body = {
      model: 'claude-sonnet-4-5',
      max_tokens: 32000,
      stream: true,
      system: [{ type: 'text', text: 'You are Claude Code.', cache_control: { type: 'ephemeral' } }],
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'hi', cache_control: { type: 'ephemeral' } }] },
        { role: 'system', content: 'Be brief.' },
        {
          role: 'assistant',
          content: [
            { type: 'thinking', thinking: '…', signature: 'x' },
            { type: 'tool_use', id: 'toolu_1', name: 'Bash', input: { command: 'ls' } },
          ],
        },
        {
          role: 'user',
          content: [
            {
              type: 'tool_result',
              tool_use_id: 'toolu_1',
              content: [{ type: 'text', text: 'a.txt' }],
              is_error: false,
            },
            { type: 'text', text: 'go on' },
          ],
        },
      ],
      tools: [
        {
          name: 'Bash',
          description: 'd'.repeat(60_000),
          defer_loading: false,
          cache_control: { type: 'ephemeral' },
          input_schema: {
            $schema: 'https://json-schema.org/draft/2020-12/schema',
            type: 'object',
            properties: { command: { type: 'string' } },
            required: ['command'],
            additionalProperties: false,
          },
        },
      ],
      metadata: { user_id: JSON.stringify({ device_id: 'd', session_id: 's' }) },
      thinking: { type: 'adaptive' },
      output_config: { effort: 'high' },
      context_management: { edits: [] },
      temperature: 1,
    };
    expect(validateMessagesRequest(body)).toBe(body);
    expect(() =>
      validateMessagesRequest({ ...body, thinking: { type: 'enabled', budget_tokens: 1024 } }),
    ).not.toThrow();
  });

  it.each([
    ['max_tokens missing', { model: 'm', messages: valid.messages }, 'max_tokens: Field required'],
    ['an unknown field', { ...valid, frequency: 1 }, 'frequency: Extra inputs are not permitted'],
    [
      'an assistant first',
      { ...valid, messages: [{ role: 'assistant', content: 'x' }] },
      'messages: the first message must use the "user" role',
    ],
    [
      'a bad role',
      { ...valid, messages: [{ role: 'tool', content: 'x' }] },
      "messages.0.role: Input should be 'user' or 'assistant'",
    ],
    [
      'a tool_result for an unknown id',
      {
        ...valid,
        messages: [
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_x', content: 'r' }] },
        ],
      },
      'messages.0.content.0: unexpected `tool_use_id` found in `tool_result` blocks: toolu_x',
    ],
    [
      'a tool_use left unanswered',
      {
        ...valid,
        messages: [
          { role: 'user', content: 'x' },
          { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'a', input: {} }] },
          { role: 'user', content: 'y' },
        ],
      },
      'messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_1',
    ],
    [
      'an input_schema not of type object',
      { ...valid, tools: [{ name: 'a', input_schema: { type: 'string' } }] },
      "tools.0.input_schema.type: Input should be 'object'",
    ],
    ['an input_schema missing', { ...valid, tools: [{ name: 'a' }] }, 'tools.0.input_schema: Field required'],
    [
      'an input_schema that is no JSON Schema (an unknown type)',
      {
        ...valid,
        tools: [{ name: 'a', input_schema: { type: 'object', properties: { n: { type: 'int' } } } }],
      },
      'tools.0.input_schema: JSON schema is invalid. It must match JSON Schema draft 2020-12 (https://json-schema.org/draft/2020-12): /properties/n',
    ],
    [
      'an input_schema whose required is not a list',
      { ...valid, tools: [{ name: 'a', input_schema: { type: 'object', required: 'n' } }] },
      'tools.0.input_schema: JSON schema is invalid. It must match JSON Schema draft 2020-12',
    ],
    [
      'a 2020-12 input_schema with a tuple items list',
      {
        ...valid,
        tools: [{ name: 'a', input_schema: { type: 'object', properties: { t: { items: [{}] } } } }],
      },
      'tools.0.input_schema: JSON schema is invalid',
    ],
    [
      'a server tool',
      { ...valid, tools: [{ type: 'web_search_20250305', name: 'web_search' }] },
      'tools.0.type: only client tools',
    ],
    [
      'a temperature past 1',
      { ...valid, temperature: 1.5 },
      'temperature: Input should be a number between 0 and 1',
    ],
    [
      'tool_choice naming no tool',
      { ...valid, tools: [tool], tool_choice: { type: 'tool', name: 'nope' } },
      "tool_choice.name: no tool named 'nope'",
    ],
    [
      'a document block',
      { ...valid, messages: [{ role: 'user', content: [{ type: 'document' }] }] },
      "messages.0.content.0.type: Input should be 'text', 'image' or 'tool_result'",
    ],
  ])('refuses %s with a 400 naming the field', (_name, body, message) => {
    const error = refusal(() => validateMessagesRequest(body));
    expect(error).toBeInstanceOf(GatewayError);
    expect(error.status).toBe(400);
    expect(error.message).toContain(message);
  });

  it('takes a valid input_schema of 2020-12, or of draft-07 when it declares that draft', () => {
    const withSchema = (input_schema: Record<string, unknown>) => ({
      ...valid,
      tools: [{ name: 'a', input_schema }],
    });
    const tuple = { type: 'object', properties: { t: { type: 'array', items: [{ type: 'string' }] } } };
    expect(() =>
      validateMessagesRequest(withSchema({ $schema: 'http://json-schema.org/draft-07/schema#', ...tuple })),
    ).not.toThrow();
    expect(() =>
      validateMessagesRequest(
        withSchema({
          $schema: 'https://json-schema.org/draft/2020-12/schema',
          type: 'object',
          properties: {
            t: { type: 'array', prefixItems: [{ type: 'string' }], items: false },
            n: { type: ['integer', 'null'], exclusiveMinimum: 0 },
            e: { enum: ['a', 'b'] },
          },
          $defs: { x: { type: 'string' } },
          propertyNames: { pattern: '^[a-z]+$' },
        }),
      ),
    ).not.toThrow();
    expect(() =>
      validateMessagesRequest(
        withSchema({ $schema: 'http://json-schema.org/draft-07/schema#', type: 'object', required: 'n' }),
      ),
    ).toThrow('It must match JSON Schema draft-07');
  });

  it('count_tokens takes no max_tokens', () => {
    expect(() => validateCountTokensRequest({ model: 'm', messages: valid.messages })).not.toThrow();
    expect(() => validateCountTokensRequest(valid)).toThrow('max_tokens: Extra inputs are not permitted');
  });
});
