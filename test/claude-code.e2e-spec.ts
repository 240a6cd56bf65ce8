import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { freePort } from './support/free-port';
import { Launcher } from './support/launcher';
import { waitFor } from './support/wait-for';

/** The Claude Code binary of this platform, as the npm package ships it (an optional dependency per platform). */
function claudeBinary(): string {
  const name = `@anthropic-ai/claude-code-${process.platform}-${process.arch}`;
  return join(
    dirname(require.resolve(`${name}/package.json`)),
    process.platform === 'win32' ? 'claude.exe' : 'claude',
  );
}

interface ClaudeResult {
  code: number | null;
  result: { type: string; subtype: string; is_error: boolean; result: string } | null;
  output: string;
}

/** `claude -p` headless, as a user runs it against a gateway: only the gateway is reachable. */
function runClaude(args: string[], env: Record<string, string>): Promise<ClaudeResult> {
  return new Promise((resolve) => {
    const child = execFile(
      claudeBinary(),
      args,
      { env, timeout: 90_000, maxBuffer: 16 * 1024 * 1024 },
      (error, stdout, stderr) => {
        let result: ClaudeResult['result'] = null;
        try {
          result = JSON.parse(stdout) as ClaudeResult['result'];
        } catch {
          // Left null: the assertion shows the output.
        }
        const code = error === null ? 0 : typeof error.code === 'number' ? error.code : null;
        resolve({ code, result, output: `${stdout}\n${stderr}` });
      },
    );
    // `claude -p` reads piped input to its end before it starts.
    child.stdin?.end();
  });
}

/**
 * The issue's proof: Claude Code, unmodified, on `npm start`'s simulator through a model alias. It sends
 * the Messages API with `?beta=true`, beta headers, thinking, cache control and its own tools, streams,
 * and ends with a result.
 */
describe('Claude Code against npm start', () => {
  let launcher: Launcher | undefined;
  let dir: string;

  afterAll(async () => {
    launcher?.kill('SIGINT');
    await launcher?.exited;
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('answers `claude -p` through a model alias and by a model id, exit code 0 with a result', async () => {
    dir = await mkdtemp(join(tmpdir(), 'claude-code-e2e-'));
    await Promise.all([mkdir(join(dir, 'home')), mkdir(join(dir, 'claude'))]);
    const catalog = join(dir, 'catalog.json');
    await writeFile(
      catalog,
      JSON.stringify({
        models: [
          {
            id: 'sim-chat',
            type: 'chat',
            owned_by: 'model-gateway',
            backend: { kind: 'simulator', mode: 'echo' },
            aliases: ['claude-sonnet-4-5', 'claude-haiku-4-5'],
          },
        ],
      }),
    );
    const [port, redisPort] = await Promise.all([freePort(), freePort()]);
    const apiKey = 'sk-claude-code-e2e';
    const stack = (launcher = Launcher.start({
      PORT: String(port),
      REDIS_URL: `redis://127.0.0.1:${redisPort}`,
      GATEWAY_API_KEYS: apiKey,
      KEY_PREFIX: 'claudecode',
      CATALOG_PATH: catalog,
    }));
    const base = `http://127.0.0.1:${port}`;
    await waitFor(
      'the alias to be listed',
      async () => {
        if (!stack.running) throw new Error('npm start exited early');
        const res = await fetch(`${base}/v1/models`, { headers: { 'x-api-key': apiKey } });
        return res.ok && (await res.text()).includes('"claude-sonnet-4-5"');
      },
      60_000,
      () => `\n--- output ---\n${stack.output}`,
    );

    const env = (key: Record<string, string>): Record<string, string> => ({
      PATH: process.env.PATH ?? '',
      HOME: join(dir, 'home'),
      CLAUDE_CONFIG_DIR: join(dir, 'claude'),
      ANTHROPIC_BASE_URL: base,
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
      DISABLE_AUTOUPDATER: '1',
      DISABLE_TELEMETRY: '1',
      DISABLE_ERROR_REPORTING: '1',
      ...key,
    });
    // A name Claude Code knows (it sends `thinking: enabled`), with the key as a Bearer token …
    const known = await runClaude(
      ['-p', 'Say hello to the gateway.', '--output-format', 'json', '--model', 'claude-sonnet-4-5'],
      env({ ANTHROPIC_AUTH_TOKEN: apiKey }),
    );
    expect(known).toMatchObject({ code: 0, result: { type: 'result', subtype: 'success', is_error: false } });
    expect(known.result!.result.length).toBeGreaterThan(0);
    // … and one it does not (adaptive thinking, effort, a system entry among the messages), in x-api-key.
    const unknown = await runClaude(
      ['-p', 'Say hello again.', '--output-format', 'json', '--model', 'sim-chat'],
      env({ ANTHROPIC_API_KEY: apiKey }),
    );
    expect(unknown).toMatchObject({ code: 0, result: { subtype: 'success', is_error: false } });
    // Both reached the Messages API; no request of theirs was refused.
    expect(stack.output).toMatch(/"path":"\/v1\/messages"\},"res":\{"status":200\}/);
    expect(stack.output).not.toMatch(/"path":"\/v1\/messages[^"]*"\},"res":\{"status":[45]\d\d\}/);
  }, 180_000);
});
