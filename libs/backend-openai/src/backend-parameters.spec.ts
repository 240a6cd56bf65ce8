import { COMMON_CHAT_PARAMETERS, supportedChatParametersOf, validateChatRequest } from '@mgw/contracts';
import { chatRequestOfBody } from '@mgw/request';
import { toUpstreamChatRequest } from './openai-chat.backend';

describe('supportedChatParametersOf', () => {
  it('gives every backend the common parameters, and an unknown kind nothing more', () => {
    for (const kind of ['simulator', 'llamacpp', 'openai']) {
      expect(supportedChatParametersOf(kind)).toEqual(expect.arrayContaining([...COMMON_CHAT_PARAMETERS]));
    }
    expect(supportedChatParametersOf('something-else')).toEqual([...COMMON_CHAT_PARAMETERS]);
  });

  it.each([
    [
      'simulator',
      ['tools', 'tool_choice', 'parallel_tool_calls', 'response_format', 'logprobs', 'top_logprobs'],
      ['logit_bias'],
    ],
    [
      'llamacpp',
      ['tools', 'tool_choice', 'parallel_tool_calls', 'response_format', 'logprobs', 'top_logprobs'],
      ['logit_bias'],
    ],
    [
      'openai',
      ['tools', 'response_format', 'logprobs', 'logit_bias', 'reasoning_effort', 'verbosity', 'prediction'],
      [],
    ],
  ])('%s honours %j and not %j', (kind, honoured, refused) => {
    const supported = supportedChatParametersOf(kind);
    expect(supported).toEqual(expect.arrayContaining(honoured));
    for (const param of refused) expect(supported).not.toContain(param);
  });

  it('lists stored completions (a gateway feature) for every backend, an unknown kind included', () => {
    for (const kind of ['simulator', 'llamacpp', 'openai', 'unknown-kind']) {
      expect(supportedChatParametersOf(kind)).toEqual(expect.arrayContaining(['store', 'metadata']));
    }
  });

  it('never lists what no backend does: audio, web search, the deprecated functions', () => {
    for (const kind of ['simulator', 'llamacpp', 'openai']) {
      const supported = supportedChatParametersOf(kind);
      for (const param of ['audio', 'modalities', 'web_search_options', 'functions', 'function_call']) {
        expect(supported).not.toContain(param);
      }
    }
  });
});

describe('the openai backend relays the parameters its entry declares', () => {
  it('puts logit_bias, reasoning_effort, verbosity and prediction into the upstream body as sent', () => {
    const relayed = {
      logit_bias: { '50256': -100 },
      reasoning_effort: 'low',
      verbosity: 'high',
      prediction: { type: 'content', content: 'x' },
    };
    const request = chatRequestOfBody(
      validateChatRequest({ messages: [{ role: 'user', content: 'hi' }], ...relayed }),
    );
    expect(toUpstreamChatRequest(request, 'up-model')).toMatchObject({ model: 'up-model', ...relayed });
    for (const param of Object.keys(relayed)) expect(supportedChatParametersOf('openai')).toContain(param);
  });

  it('keeps store and metadata (the gateway keeps stored completions) out of the upstream request', () => {
    const request = chatRequestOfBody(
      validateChatRequest({
        messages: [{ role: 'user', content: 'hi' }],
        store: true,
        metadata: { team: 'search' },
        reasoning_effort: 'low',
      }),
    );
    const upstream = toUpstreamChatRequest(request, 'upstream-model') as Record<string, unknown>;
    expect(upstream).toMatchObject({ reasoning_effort: 'low' });
    expect(upstream).not.toHaveProperty('store');
    expect(upstream).not.toHaveProperty('metadata');
  });
});
