import { validateResponsesRequest } from './responses-request.schema';
import { refusal } from '@mgw/testing';

describe('validateResponsesRequest', () => {
  it('takes a string input as one user message, with OpenAI defaults', () => {
    const request = validateResponsesRequest({ model: 'm', input: 'hi' });
    expect(request.input).toEqual([{ type: 'message', role: 'user', content: 'hi' }]);
    expect(request).toMatchObject({ store: true, stream: false, background: false, toolChoice: 'auto' });
    expect(request.echo).toMatchObject({ temperature: 1, top_p: 1, truncation: 'disabled', tools: [] });
  });

  it('accepts what Codex sends: developer messages, namespace and hosted tools, reasoning, include', () => {
    const request = validateResponsesRequest({
      model: 'm',
      instructions: 'be brief',
      input: [
        { type: 'message', role: 'developer', content: [{ type: 'input_text', text: 'rules' }] },
        { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'go' }] },
        { type: 'reasoning', id: 'rs_1', summary: [], encrypted_content: 'x' },
      ],
      tools: [
        {
          type: 'function',
          name: 'shell',
          parameters: { $schema: 'http://json-schema.org/draft-07/schema#', type: 'object' },
        },
        {
          type: 'namespace',
          name: 'fs',
          description: 'files',
          tools: [{ type: 'function', name: 'read', parameters: { type: 'object' } }],
        },
        { type: 'web_search', external_web_access: false },
      ],
      tool_choice: 'auto',
      parallel_tool_calls: false,
      reasoning: { summary: 'auto' },
      include: ['reasoning.encrypted_content'],
      store: false,
      stream: true,
      prompt_cache_key: 'abc',
      client_metadata: { session: 'x' },
    });
    expect(request.tools.map(({ tool, param }) => [tool.name, param])).toEqual([
      ['shell', 'tools[0]'],
      ['read', 'tools[1].tools[0]'],
    ]);
    expect(request.hostedTools).toEqual(['web_search']);
    expect(request.passThrough).toEqual({ prompt_cache_key: 'abc' });
  });

  it.each([
    [{ input: [{ type: 'bogus' }] }, 'input[0].type'],
    [{ input: [{ role: 'user', content: [{ type: 'input_audio' }] }] }, 'input[0].content[0].type'],
    [{ input: [{ role: 'robot', content: 'x' }] }, 'input[0].role'],
    [{ input: [{ type: 'function_call_output', output: 'x' }] }, 'input[0].call_id'],
    [{ input: 3 }, 'input'],
    [{}, 'input'],
    [{ input: 'x', temperature: 3 }, 'temperature'],
    [{ input: 'x', max_output_tokens: 1.5 }, 'max_output_tokens'],
    [{ input: 'x', tools: [{ type: 'bogus' }] }, 'tools[0].type'],
    [{ input: 'x', text: { format: { type: 'json_schema', name: 'n' } } }, 'text.format.schema'],
    [{ input: 'x', surprise: 1 }, 'surprise'],
    [{ input: 'x', background: true, store: false }, 'background'],
    [{ input: new Array(5000).fill('x') }, 'input'],
  ])('refuses %j naming %s', (body, param) => {
    const error = refusal(() => validateResponsesRequest({ model: 'm', ...body }));
    expect(error.status).toBe(400);
    expect(error.param).toBe(param);
  });
});
