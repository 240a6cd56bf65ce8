import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Agent, run, setDefaultOpenAIClient, setTracingDisabled, tool } from '@openai/agents';
import { createOpenAI } from '@ai-sdk/openai';
import { generateText, streamText } from 'ai';
import OpenAI from 'openai';
import OpenAIv6 from 'openai-v6';
import { z } from 'zod';
import { freePort } from './support/free-port';
import { Launcher } from './support/launcher';
import { waitFor } from './support/wait-for';

const CODEX = resolve(
  __dirname,
  '../node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex',
);
const API_KEY = 'sk-responses-clients-test';

/** Runs a process to its end; resolves its exit code and output. */
function runProcess(
  command: string,
  args: string[],
  env: Record<string, string>,
  timeoutMs: number,
): Promise<{ code: number | null; output: string }> {
  return new Promise((done) => {
    const child = spawn(command, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.once('exit', (code) => {
      clearTimeout(timer);
      done({ code, output });
    });
  });
}

/**
 * The clients that speak the Responses API by default, unchanged, against `npm start`: Codex CLI (the real
 * binary), the OpenAI Agents SDK, the AI SDK's default OpenAI provider, and the openai SDK of the previous
 * major (6).
 */
describe('Responses API clients against npm start', () => {
  let launcher: Launcher;
  let baseUrl = '';

  beforeAll(async () => {
    const [port, redisPort] = await Promise.all([freePort(), freePort()]);
    baseUrl = `http://127.0.0.1:${port}`;
    launcher = Launcher.start({
      PORT: String(port),
      REDIS_URL: `redis://127.0.0.1:${redisPort}`,
      GATEWAY_API_KEYS: API_KEY,
      KEY_PREFIX: 'respclients',
    });
    await waitFor(
      'sim-chat to be listed',
      async () => {
        if (!launcher.running) throw new Error('npm start exited early');
        const res = await fetch(`${baseUrl}/v1/models`, { headers: { authorization: `Bearer ${API_KEY}` } });
        return (
          res.ok && ((await res.json()) as { data: { id: string }[] }).data.some((m) => m.id === 'sim-chat')
        );
      },
      60_000,
      () => `\n--- output ---\n${launcher.output}`,
    );
    setTracingDisabled(true);
    setDefaultOpenAIClient(new OpenAI({ apiKey: API_KEY, baseURL: `${baseUrl}/v1`, maxRetries: 0 }));
  });

  afterAll(async () => {
    if (launcher === undefined) return;
    await launcher.stop();
  });

  it('runs a Codex CLI turn (wire_api = "responses") to exit code 0', async () => {
    const home = await mkdtemp(join(tmpdir(), 'codex-home-'));
    try {
      await writeFile(
        join(home, 'config.toml'),
        [
          'model_provider = "gw"',
          'model = "sim-chat"',
          'approval_policy = "never"',
          'sandbox_mode = "danger-full-access"',
          '[model_providers.gw]',
          'name = "gateway"',
          `base_url = "${baseUrl}/v1"`,
          'wire_api = "responses"',
          'env_key = "GW_KEY"',
          '[analytics]',
          'enabled = false',
          '[features]',
          'plugins = false',
          'remote_plugin = false',
          'apps = false',
          'shell_snapshot = false',
          '',
        ].join('\n'),
      );
      const { code, output } = await runProcess(
        CODEX,
        ['exec', '--skip-git-repo-check', '--ephemeral', 'Reply with the word pelican.'],
        { PATH: process.env.PATH ?? '', HOME: home, CODEX_HOME: home, GW_KEY: API_KEY, NO_COLOR: '1' },
        60_000,
      );
      expect({ code, output }).toEqual({ code: 0, output: expect.stringContaining('pelican') });
    } finally {
      await rm(home, { recursive: true, force: true });
    }
  });

  it('runs an OpenAI Agents SDK agent with a function tool to its final output', async () => {
    const calls: string[] = [];
    const weather = tool({
      name: 'get_weather',
      description: 'The weather in a city.',
      parameters: z.object({ city: z.string() }),
      execute: ({ city }) => {
        calls.push(city);
        return 'sunny and 21 C';
      },
    });
    const agent = new Agent({ name: 'forecaster', model: 'sim-chat', tools: [weather] });
    const result = await run(agent, 'Use get_weather for Oslo.');
    expect(calls).toHaveLength(1);
    expect(result.finalOutput).toContain('sunny and 21 C');
  });

  it("answers the AI SDK's default OpenAI provider with generateText and streamText", async () => {
    const provider = createOpenAI({ apiKey: API_KEY, baseURL: `${baseUrl}/v1` });
    const generated = await generateText({ model: provider('sim-chat'), prompt: 'Echo me, AI SDK.' });
    expect(generated.text).toBe('Echo me, AI SDK.');
    const streamed = streamText({ model: provider('sim-chat'), prompt: 'Stream me, AI SDK.' });
    let text = '';
    for await (const delta of streamed.textStream) text += delta;
    expect(text).toBe('Stream me, AI SDK.');
    expect((await streamed.usage).outputTokens).toBeGreaterThan(0);
  });

  it('serves the openai SDK 6 too: chat completions and responses.create', async () => {
    const client = new OpenAIv6({ apiKey: API_KEY, baseURL: `${baseUrl}/v1`, maxRetries: 0 });
    const completion = await client.chat.completions.create({
      model: 'sim-chat',
      messages: [{ role: 'user', content: 'SDK six chat.' }],
    });
    expect(completion.choices[0]!.message.content).toBe('SDK six chat.');
    const response = await client.responses.create({ model: 'sim-chat', input: 'SDK six responses.' });
    expect(response.output_text).toBe('SDK six responses.');
  });
});
