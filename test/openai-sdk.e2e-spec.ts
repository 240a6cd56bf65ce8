import OpenAI from 'openai';
import sharp from 'sharp';
import { Stack } from './support/stack';

/** The official client talks to the real stack: all three operations and the errors it must recognise. */
describe('the openai SDK against the gateway', () => {
  let stack: Stack;
  let client: OpenAI;

  beforeAll(async () => {
    stack = await Stack.start();
    client = new OpenAI({ apiKey: stack.apiKey, baseURL: `${stack.baseUrl}/v1`, maxRetries: 0 });
  });

  afterAll(async () => {
    await stack?.stop();
  });

  it('lists the live models with the spec type and capabilities', async () => {
    const page = await client.models.list();
    const byId = new Map(page.data.map((m) => [m.id, m as unknown as Record<string, unknown>]));
    expect(byId.get('sim-chat')).toEqual({
      id: 'sim-chat',
      object: 'model',
      created: expect.any(Number),
      owned_by: 'model-gateway',
      type: 'chat/compilations',
      capabilities: {
        inputCapabilities: { text: true, image: true },
        outputCapabilities: { text: true, image: false },
      },
      supported_parameters: expect.arrayContaining(['tools', 'response_format', 'logprobs']),
    });
    expect(byId.get('sim-image')).toEqual({
      id: 'sim-image',
      object: 'model',
      created: expect.any(Number),
      owned_by: 'model-gateway',
      type: 'images/generations',
      capabilities: {
        inputCapabilities: { text: true, image: false },
        outputCapabilities: { text: false, image: true },
      },
    });
  });

  it('completes a chat without streaming', async () => {
    const completion = await client.chat.completions.create({
      model: 'sim-chat',
      messages: [
        { role: 'system', content: 'You are a mirror.' },
        { role: 'user', content: 'Reflect this sentence back, please.' },
      ],
    });
    expect(completion.object).toBe('chat.completion');
    expect(completion.id).toMatch(/^chatcmpl-/);
    expect(completion.model).toBe('sim-chat');
    expect(completion.system_fingerprint).toMatch(/^fp_/);
    expect(completion.choices).toHaveLength(1);
    expect(completion.choices[0]!.message).toMatchObject({
      role: 'assistant',
      content: 'Reflect this sentence back, please.',
    });
    expect(completion.choices[0]!.finish_reason).toBe('stop');
    expect(completion.choices[0]!.logprobs).toBeNull();
    const usage = completion.usage!;
    expect(usage.prompt_tokens).toBeGreaterThan(0);
    expect(usage.completion_tokens).toBeGreaterThan(0);
    expect(usage.total_tokens).toBe(usage.prompt_tokens + usage.completion_tokens);
  });

  it('streams a chat: same id on every chunk, deltas, then a final chunk with usage', async () => {
    const stream = await client.chat.completions.create({
      model: 'sim-chat',
      stream: true,
      messages: [{ role: 'user', content: 'Stream me a few tokens of text, thanks.' }],
    });
    const chunks = [];
    for await (const chunk of stream) chunks.push(chunk);
    expect(chunks.length).toBeGreaterThan(2);
    expect(new Set(chunks.map((c) => c.id)).size).toBe(1);
    const middle = chunks.slice(0, -1);
    for (const chunk of middle) {
      expect(chunk.object).toBe('chat.completion.chunk');
      expect(typeof chunk.choices[0]!.delta.content).toBe('string');
      expect(chunk.choices[0]!.finish_reason).toBeNull();
      expect(chunk.usage ?? undefined).toBeUndefined();
    }
    expect(middle.map((c) => c.choices[0]!.delta.content).join('')).toBe(
      'Stream me a few tokens of text, thanks.',
    );
    const last = chunks.at(-1)!;
    expect(last.choices[0]!.delta).toEqual({});
    expect(last.choices[0]!.finish_reason).toBe('stop');
    expect(last.usage!.completion_tokens).toBe(middle.length);
  });

  it('uses the default chat model when none is given', async () => {
    const completion = await client.chat.completions.create({
      messages: [{ role: 'user', content: 'defaults' }],
    } as unknown as OpenAI.ChatCompletionCreateParamsNonStreaming);
    expect(completion.model).toBe('sim-chat');
  });

  it('honours n, max_tokens and stop', async () => {
    const limited = await client.chat.completions.create({
      model: 'sim-chat-words',
      n: 3,
      max_tokens: 5,
      messages: [{ role: 'user', content: 'words please' }],
    });
    expect(limited.choices.map((c) => c.index)).toEqual([0, 1, 2]);
    expect(limited.choices.every((c) => c.finish_reason === 'length')).toBe(true);
    expect(limited.usage!.completion_tokens).toBe(15);

    const stopped = await client.chat.completions.create({
      model: 'sim-chat',
      stop: ['STOP'],
      messages: [{ role: 'user', content: 'before STOP after' }],
    });
    expect(stopped.choices[0]!.message.content).toBe('before ');
    expect(stopped.choices[0]!.finish_reason).toBe('stop');
  });

  it('generates PNG images of exactly the requested size', async () => {
    const square = await client.images.generate({
      model: 'sim-image',
      prompt: 'a lighthouse at dusk',
      size: '256x256',
      n: 2,
    });
    expect(square.data).toHaveLength(2);
    for (const image of square.data!) {
      const png = Buffer.from(image.b64_json!, 'base64');
      expect(png.subarray(1, 4).toString()).toBe('PNG');
      const meta = await sharp(png).metadata();
      expect([meta.format, meta.width, meta.height]).toEqual(['png', 256, 256]);
      expect(image.revised_prompt).toBe('a lighthouse at dusk');
    }
    expect(square.data![0]!.b64_json).not.toBe(square.data![1]!.b64_json);

    const wide = await client.images.generate({
      model: 'sim-image',
      prompt: 'a wide harbour',
      size: '1792x1024',
    });
    const meta = await sharp(Buffer.from(wide.data![0]!.b64_json!, 'base64')).metadata();
    expect([meta.width, meta.height]).toEqual([1792, 1024]);
  });

  it('raises the SDK error classes for bad requests', async () => {
    await expect(
      client.chat.completions.create({ model: 'no-such-model', messages: [{ role: 'user', content: 'x' }] }),
    ).rejects.toMatchObject({ status: 404, code: 'model_not_found', param: 'model' });
    await expect(
      client.chat.completions.create({
        model: 'sim-chat',
        temperature: 2.5,
        messages: [{ role: 'user', content: 'x' }],
      }),
    ).rejects.toBeInstanceOf(OpenAI.BadRequestError);
    await expect(client.images.generate({ model: 'sim-chat', prompt: 'x' })).rejects.toMatchObject({
      status: 400,
      code: 'model_type_mismatch',
    });
    const stranger = new OpenAI({ apiKey: 'sk-wrong-key', baseURL: `${stack.baseUrl}/v1`, maxRetries: 0 });
    await expect(stranger.models.list()).rejects.toBeInstanceOf(OpenAI.AuthenticationError);
  });
});
