import { curlSnippet, sdkSnippet } from './request.snippets';

const body = {
  model: 'sim-chat',
  stream: true,
  messages: [{ role: 'user', content: "it's here" }],
};

describe('request snippets', () => {
  it('curl: the request as shell words, the key from $OPENAI_API_KEY', () => {
    const curl = curlSnippet('http://gw:8080', 'chat', body);
    expect(curl).toBe(
      [
        'curl -N http://gw:8080/v1/chat/completions \\',
        '  -H "Authorization: Bearer $OPENAI_API_KEY" \\',
        "  -H 'Content-Type: application/json' \\",
        `  -d '{"model":"sim-chat","stream":true,"messages":[{"role":"user","content":"it'\\''s here"}]}'`,
      ].join('\n'),
    );
  });

  it('openai SDK: a runnable stream loop, the key left to the SDK', () => {
    const code = sdkSnippet('http://gw:8080', 'chat', body);
    expect(code).toContain('new OpenAI({ baseURL: "http://gw:8080/v1" })');
    expect(code).toContain('model: "sim-chat",');
    expect(code).toContain('for await (const chunk of stream)');
    expect(code).not.toMatch(/apiKey/);
  });

  it('images: client.images.generate', () => {
    const code = sdkSnippet('http://gw', 'images', {
      model: 'sim-image',
      prompt: 'a',
      size: '256x256',
      n: 2,
    });
    expect(code).toContain('client.images.generate({');
    expect(curlSnippet('http://gw', 'images', { prompt: 'a' })).toContain(
      'curl http://gw/v1/images/generations',
    );
  });
});
