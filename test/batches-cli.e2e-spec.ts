import { execFile } from 'node:child_process';
import { mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { Stack } from './support/stack';

const run = promisify(execFile);
const CLI = resolve(__dirname, '..', 'dist/apps/keys-cli/src/main.js');

const jsonl = (lines: unknown[]): string => lines.map((line) => JSON.stringify(line)).join('\n') + '\n';

/**
 * `npm run keys -- batches …` against the real processes, as an API key: create uploads a JSONL file and
 * creates its batch, watch prints request_counts until the end and downloads the results, list and cancel.
 */
describe('keys CLI batches (real stack)', () => {
  let stack: Stack;
  let dir: string;

  beforeAll(async () => {
    stack = await Stack.start({
      without: ['image-worker'],
      waitForModels: ['sim-chat', 'slow-chat'],
      catalog: {
        models: [
          { id: 'sim-chat', type: 'chat', owned_by: 'model-gateway', backend: { kind: 'simulator' } },
          // Lines of several seconds each: a batch of them is still running when it is cancelled.
          {
            id: 'slow-chat',
            type: 'chat',
            owned_by: 'model-gateway',
            backend: { kind: 'simulator', mode: 'echo', tokensPerSecond: 5 },
          },
        ],
      },
    });
    dir = await mkdtemp(join(tmpdir(), 'batches-cli-e2e-'));
  });

  afterAll(async () => {
    await stack?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const cli = async (...args: string[]) => {
    const { stdout, stderr } = await run(
      process.execPath,
      [CLI, 'batches', ...args, '--model-key', stack.apiKey, '--gateway', stack.baseUrl],
      { env: { PATH: process.env.PATH ?? '' } },
    );
    return { result: JSON.parse(stdout) as Record<string, unknown>, stderr };
  };

  it('creates a batch from a JSONL file, watches it to completed and downloads its output', async () => {
    const file = join(dir, 'requests.jsonl');
    const lines = Array.from({ length: 6 }, (_v, i) => ({
      custom_id: `cli-${i}`,
      method: 'POST',
      url: '/v1/chat/completions',
      body: { model: 'sim-chat', max_tokens: 4, messages: [{ role: 'user', content: `q ${i}` }] },
    }));
    lines.push({ ...lines[0]!, custom_id: 'cli-unknown-model', body: { ...lines[0]!.body, model: 'nope' } });
    await writeFile(file, jsonl(lines));

    const { result: created } = await cli(
      'create',
      file,
      '--endpoint',
      '/v1/chat/completions',
      '--metadata',
      'from=cli',
    );
    expect(created).toMatchObject({ object: 'batch', metadata: { from: 'cli' } });
    const id = created.id as string;

    const out = join(dir, 'out');
    const { result: done, stderr } = await cli('watch', id, '--interval', '200', '--out', out);
    expect(done).toMatchObject({
      id,
      status: 'completed',
      request_counts: { total: 7, completed: 6, failed: 1 },
    });
    expect(stderr).toContain(`${id} completed 7/7 done (1 failed)`);
    expect((await readdir(out)).sort()).toEqual([`${id}.errors.jsonl`, `${id}.output.jsonl`]);
    const ids = async (name: string) =>
      (await readFile(join(out, name), 'utf8'))
        .split('\n')
        .filter((line) => line !== '')
        .map((line) => (JSON.parse(line) as { custom_id: string }).custom_id)
        .sort();
    expect(await ids(`${id}.output.jsonl`)).toEqual(
      lines
        .slice(0, 6)
        .map((line) => line.custom_id)
        .sort(),
    );
    expect(await ids(`${id}.errors.jsonl`)).toEqual(['cli-unknown-model']);

    const { result: list } = await cli('list', '--limit', '5');
    expect((list.data as { id: string }[]).map((batch) => batch.id)).toContain(id);
  });

  it("cancels a batch; the gateway's refusals exit 1 with its error, usage mistakes exit 2", async () => {
    const file = join(dir, 'cancel.jsonl');
    const body = {
      model: 'slow-chat',
      max_tokens: 40,
      messages: [{ role: 'user', content: 'a question long enough to take seconds to echo back' }],
    };
    await writeFile(
      file,
      jsonl(
        Array.from({ length: 200 }, (_v, i) => ({
          custom_id: `c-${i}`,
          method: 'POST',
          url: '/v1/chat/completions',
          body,
        })),
      ),
    );
    const { result: created } = await cli('create', file, '--endpoint', '/v1/chat/completions');
    const { result: cancelling } = await cli('cancel', created.id as string);
    expect(['cancelling', 'cancelled']).toContain(cancelling.status);
    const { result: ended } = await cli('watch', created.id as string, '--interval', '200');
    expect(ended.status).toBe('cancelled');

    await expect(cli('show', 'batch_doesnotexist')).rejects.toMatchObject({
      code: 1,
      stderr: expect.stringContaining('404') as unknown,
    });
    await expect(cli('create', file, '--endpoint', '/v1/moderations')).rejects.toMatchObject({ code: 1 });
    await expect(
      cli('create', join(dir, 'missing.jsonl'), '--endpoint', '/v1/embeddings'),
    ).rejects.toMatchObject({ code: 2 });
  });
});
