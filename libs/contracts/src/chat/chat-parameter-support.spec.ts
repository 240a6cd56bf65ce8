import { rejectionOf } from '@mgw/testing';
import {
  assertChatParametersSupported,
  COMMON_CHAT_PARAMETERS,
  unsupportedChatParameter,
} from './chat-parameter-support';
import type { ChatCompletionRequest } from './chat-request.schema';
import { validateChatRequest } from './chat-request.validator';

const parse = (extra: Record<string, unknown>): ChatCompletionRequest =>
  validateChatRequest({ messages: [{ role: 'user', content: 'hi' }], ...extra });

const tools = [{ type: 'function', function: { name: 'f' } }];
const TOOLS_AND_FORMATS = ['tools', 'tool_choice', 'parallel_tool_calls', 'response_format'];

describe('per-model parameter support', () => {
  it.each<[string, Record<string, unknown>]>([
    ['tools', { tools }],
    ['response_format', { response_format: { type: 'json_object' } }],
    ['logprobs', { logprobs: true }],
    ['logit_bias', { logit_bias: { '1': 1 } }],
    ['reasoning_effort', { reasoning_effort: 'low' }],
    ['verbosity', { verbosity: 'low' }],
    ['prediction', { prediction: { type: 'content', content: 'x' } }],
    ['web_search_options', { web_search_options: {} }],
    ['audio', { audio: { voice: 'alloy', format: 'mp3' } }],
    ['modalities', { modalities: ['text', 'audio'] }],
    ['functions', { functions: [{ name: 'f' }] }],
    ['function_call', { function_call: 'auto' }],
    ['stream_options.include_obfuscation', { stream_options: { include_obfuscation: true } }],
  ])('refuses %s for a model that supports only the common parameters', (param, extra) => {
    const error = rejectionOf(
      (body) => assertChatParametersSupported(parse(body as Record<string, unknown>), { id: 'sim-chat' }),
      extra,
    );
    expect(error.toBody()).toEqual({
      error: {
        message: expect.stringMatching(
          new RegExp(`^The model \`sim-chat\` does not support \`${param}\`\\.`),
        ),
        type: 'invalid_request_error',
        param,
        code: 'unsupported_parameter',
      },
    });
  });

  it.each<Record<string, unknown>>([
    { logprobs: false },
    { response_format: { type: 'text' } },
    { store: false },
    { store: true, metadata: { team: 'search' } },
    { modalities: ['text'] },
    { stream_options: { include_usage: true, include_obfuscation: false } },
    { metadata: { a: 'b' }, service_tier: 'flex', prompt_cache_key: 'k', safety_identifier: 's', user: 'u' },
  ])('accepts parameters at their defaults, the gateway’s own and advisory ones everywhere: %j', (extra) => {
    expect(unsupportedChatParameter(parse(extra), COMMON_CHAT_PARAMETERS)).toBeNull();
  });

  it('accepts tools, formats and logprobs where the model supports them, and names the first one it does not', () => {
    const supported = [...COMMON_CHAT_PARAMETERS, ...TOOLS_AND_FORMATS];
    const request = parse({ tools, tool_choice: 'required', response_format: { type: 'json_object' } });
    expect(unsupportedChatParameter(request, supported)).toBeNull();
    expect(unsupportedChatParameter(parse({ tools, logprobs: true, top_logprobs: 2 }), supported)).toBe(
      'logprobs',
    );
  });

  it('names tool_choice and parallel_tool_calls on their own when a model lists tools but not them', () => {
    const request = parse({ tools, tool_choice: 'auto' });
    expect(unsupportedChatParameter(request, [...COMMON_CHAT_PARAMETERS, 'tools'])).toBe('tool_choice');
  });

  it('uses the model entry’s list when it has one', () => {
    const request = parse({ logit_bias: { '1': 1 } });
    expect(() =>
      assertChatParametersSupported(request, {
        id: 'up',
        supportedParameters: [...COMMON_CHAT_PARAMETERS, 'logit_bias'],
      }),
    ).not.toThrow();
  });

  it('points from the deprecated functions to tools', () => {
    const error = rejectionOf(
      () => assertChatParametersSupported(parse({ functions: [] }), { id: 'm' }),
      null,
    );
    expect(error.message).toContain('Use `tools` instead.');
  });
});
