import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { transpileModule, ModuleKind, ScriptTarget } from 'typescript';
import { freePort } from './support/free-port';
import { Launcher } from './support/launcher';
import { blockName, markedBlocks, parseToml, REPO_ROOT, type FencedBlock } from './support/markdown-docs';
import { waitFor } from './support/wait-for';

const API_KEY = 'sk-docs-test-key';
/** The address the docs write; every block runs with it replaced by the test stack's. */
const DOCUMENTED_ORIGIN = /http:\/\/(?:127\.0\.0\.1|localhost):8080/g;
const CODEX = join(
  REPO_ROOT,
  'node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex',
);
/** Where snippets are written: inside the repository (so `import 'openai'` resolves), git-ignored. */
const SNIPPETS_DIR = join(REPO_ROOT, 'test/artifacts/docs-snippets');

interface Run {
  code: number | null;
  output: string;
}

function runProcess(
  command: string,
  args: string[],
  options: { env: Record<string, string>; cwd?: string },
  timeoutMs: number,
): Promise<Run> {
  return new Promise((done) => {
    const child = spawn(command, args, { ...options, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.once('close', (code) => {
      clearTimeout(timer);
      done({ code, output });
    });
  });
}

/**
 * The docs' live half (docs/development.md, "Docs that cannot rot"): every ```sh runnable block (curl
 * lines) and every ```ts runnable block (SDK snippets) of README.md and docs/ runs against one stack started
 * as the quick start says — `npm start`, which starts a private Redis when none answers — and the Codex
 * configuration drives a real `codex exec` turn. The static half (links, catalogs, env files) is
 * test/unit/docs/docs.spec.ts.
 */
describe('the docs against npm start', () => {
  let launcher: Launcher;
  let origin = '';

  beforeAll(async () => {
    const [port, redisPort] = await Promise.all([freePort(), freePort()]);
    origin = `http://127.0.0.1:${port}`;
    launcher = Launcher.start({
      PORT: String(port),
      REDIS_URL: `redis://127.0.0.1:${redisPort}`,
      GATEWAY_API_KEYS: API_KEY,
      KEY_PREFIX: 'docstest',
    });
    await mkdir(SNIPPETS_DIR, { recursive: true });
    await waitFor(
      'the quick start models to be listed',
      async () => {
        if (!launcher.running) throw new Error('npm start exited early');
        const res = await fetch(`${origin}/v1/models`, { headers: { authorization: `Bearer ${API_KEY}` } });
        if (!res.ok) return false;
        const ids = ((await res.json()) as { data: { id: string }[] }).data.map((m) => m.id);
        return ['sim-chat', 'sim-chat-words', 'sim-image', 'sim-embed'].every((id) => ids.includes(id));
      },
      60_000,
      () => `\n--- output ---\n${launcher.output}`,
    );
  });

  afterAll(async () => {
    await launcher?.stop();
    await rm(SNIPPETS_DIR, { recursive: true, force: true });
  });

  const env = (): Record<string, string> => ({ PATH: process.env.PATH ?? '', KEY: API_KEY, NO_COLOR: '1' });
  const local = (code: string): string => code.replace(DOCUMENTED_ORIGIN, origin);

  describe('shell commands (```sh runnable)', () => {
    const blocks = markedBlocks('runnable', 'sh');

    it('exist', () => expect(blocks.length).toBeGreaterThan(3));

    it.each(blocks.map((block) => [blockName(block), block] as const))('%s', async (_name, block) => {
      const dir = await mkdtemp(join(tmpdir(), 'docs-sh-'));
      try {
        // curl as a careful reader runs it: an HTTP error status fails the block, with the body shown.
        const script = [
          'set -euo pipefail',
          'curl() { command curl --fail-with-body --silent --show-error "$@"; }',
          local(block.code),
        ].join('\n');
        const run = await runProcess('bash', ['-c', script], { env: env(), cwd: dir }, 30_000);
        expect({ block: blockName(block), ...run }).toEqual({
          block: blockName(block),
          code: 0,
          output: expect.not.stringContaining('"error":{') as unknown,
        });
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    });
  });

  describe('SDK snippets (```ts runnable)', () => {
    const blocks = markedBlocks('runnable', 'ts');

    it('exist', () => expect(blocks.length).toBeGreaterThan(3));

    it.each(blocks.map((block) => [blockName(block), block] as const))('%s', async (_name, block) => {
      const file = join(SNIPPETS_DIR, `${block.file.replace(/[/.]/g, '_')}_${block.line}.mjs`);
      const { outputText } = transpileModule(local(block.code), {
        compilerOptions: { module: ModuleKind.ESNext, target: ScriptTarget.ES2022 },
      });
      await writeFile(file, outputText);
      const run = await runProcess(process.execPath, [file], { env: env(), cwd: REPO_ROOT }, 30_000);
      expect({ block: blockName(block), ...run }).toEqual({
        block: blockName(block),
        code: 0,
        output: expect.any(String) as unknown,
      });
    });
  });

  describe('Codex configuration (```toml codex)', () => {
    const blocks = markedBlocks('codex', 'toml');

    it.each(blocks.map((block) => [blockName(block), block] as const))(
      '%s runs a codex exec turn',
      async (_name, block: FencedBlock) => {
        const home = await mkdtemp(join(tmpdir(), 'docs-codex-'));
        try {
          const config = parseToml(block.code);
          const provider = (config.model_providers as Record<string, Record<string, string>>)[
            config.model_provider as string
          ]!;
          // The documented file as it stands, plus what a test needs of Codex: no prompts, no telemetry.
          const testOnly = ['approval_policy = "never"', 'sandbox_mode = "danger-full-access"'];
          const quiet = [
            '[analytics]',
            'enabled = false',
            '[features]',
            'plugins = false',
            'remote_plugin = false',
            'apps = false',
            'shell_snapshot = false',
          ];
          await writeFile(
            join(home, 'config.toml'),
            [...testOnly, local(block.code), ...quiet, ''].join('\n'),
          );
          const run = await runProcess(
            CODEX,
            ['exec', '--skip-git-repo-check', '--ephemeral', 'Reply with the word pelican.'],
            {
              env: {
                PATH: process.env.PATH ?? '',
                HOME: home,
                CODEX_HOME: home,
                NO_COLOR: '1',
                [provider.env_key!]: API_KEY,
              },
            },
            45_000,
          );
          expect(run).toEqual({ code: 0, output: expect.stringContaining('pelican') as unknown });
        } finally {
          await rm(home, { recursive: true, force: true });
        }
      },
    );
  });
});
