import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GatewayRefusal, runBatchesCommand, type BatchesIo } from './batches.cli';
import { CliUsageError } from './keys.cli';

interface Call {
  method: string;
  url: string;
  authorization: string | null;
  body: unknown;
}

/** A stand-in gateway: answers each call with the next scripted answer of its route, and records the calls. */
function fakeGateway(routes: Record<string, { status?: number; body: unknown }[]>) {
  const calls: Call[] = [];
  const progress: string[] = [];
  const fetch = ((input: string | URL, init: RequestInit = {}) => {
    const url = String(input);
    const method = init.method ?? 'GET';
    const headers = new Headers(init.headers);
    const body =
      init.body instanceof FormData
        ? Object.fromEntries(init.body.entries())
        : typeof init.body === 'string'
          ? JSON.parse(init.body)
          : undefined;
    calls.push({ method, url, authorization: headers.get('authorization'), body });
    const answers = routes[`${method} ${new URL(url).pathname}`];
    const answer = answers && answers.length > 1 ? answers.shift()! : answers?.[0];
    if (answer === undefined) return Promise.resolve(new Response('no route', { status: 599 }));
    const text = typeof answer.body === 'string' ? answer.body : JSON.stringify(answer.body);
    return Promise.resolve(new Response(text, { status: answer.status ?? 200 }));
  }) as typeof globalThis.fetch;
  const io: BatchesIo = { fetch, sleep: () => Promise.resolve(), progress: (line) => progress.push(line) };
  return { io, calls, progress };
}

const batch = (status: string, completed: number, failed: number, extra: Record<string, unknown> = {}) => ({
  id: 'batch_1',
  object: 'batch',
  status,
  request_counts: { total: 4, completed, failed },
  output_file_id: null,
  error_file_id: null,
  ...extra,
});

describe('keys CLI batches', () => {
  let dir: string;

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'batches-cli-'));
  });

  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it.each([
    [['create', 'x.jsonl', '--endpoint', '/v1/embeddings'], 'batches create needs --model-key'],
    [['watch', 'batch_1', '--model-key', 'k', '--interval', '0'], '--interval must be a whole number'],
    [['create', 'x.jsonl', '--model-key', 'k'], 'batches create needs --endpoint'],
    [['watch', '--model-key', 'k'], 'batches watch takes exactly one id'],
    [['retry', 'batch_1', '--model-key', 'k'], 'unknown batches command "retry"'],
    [['list', '--model-key', 'k', '--gateway', 'localhost:8080'], '--gateway must be an http(s) URL'],
    [['create', 'x.jsonl', '--model-key', 'k', '--endpoint', 'e', '--metadata', 'nokey'], '--metadata'],
  ])('refuses %j before calling the gateway', async (argv, message) => {
    const gateway = fakeGateway({});
    const refusal = runBatchesCommand(argv, gateway.io);
    await expect(refusal).rejects.toThrow(CliUsageError);
    await expect(refusal).rejects.toThrow(message);
    expect(gateway.calls).toEqual([]);
  });

  it('uploads the file as purpose batch, then creates the batch over it, as the API key', async () => {
    const file = join(dir, 'requests.jsonl');
    await writeFile(file, '{"custom_id":"a"}\n');
    const gateway = fakeGateway({
      'POST /v1/files': [{ body: { id: 'file-1', object: 'file' } }],
      'POST /v1/batches': [{ body: batch('validating', 0, 0) }],
    });
    const created = await runBatchesCommand(
      [
        'create',
        file,
        '--endpoint',
        '/v1/embeddings',
        '--model-key',
        'sk-gw-test',
        '--gateway',
        'http://gw:9000/',
        '--metadata',
        'suite=nightly',
      ],
      gateway.io,
    );
    expect(created).toMatchObject({ id: 'batch_1', status: 'validating' });
    expect(gateway.calls.map((c) => `${c.method} ${c.url}`)).toEqual([
      'POST http://gw:9000/v1/files',
      'POST http://gw:9000/v1/batches',
    ]);
    expect(gateway.calls.every((c) => c.authorization === 'Bearer sk-gw-test')).toBe(true);
    const form = gateway.calls[0]!.body as { purpose: string; file: File };
    expect(form.purpose).toBe('batch');
    expect(form.file.name).toBe('requests.jsonl');
    expect(await form.file.text()).toBe('{"custom_id":"a"}\n');
    expect(gateway.calls[1]!.body).toEqual({
      input_file_id: 'file-1',
      endpoint: '/v1/embeddings',
      completion_window: '24h',
      metadata: { suite: 'nightly' },
    });
  });

  it("stops at the gateway's refusal of the upload, with its status and code", async () => {
    const file = join(dir, 'big.jsonl');
    await writeFile(file, '{}\n');
    const gateway = fakeGateway({
      'POST /v1/files': [
        { status: 413, body: { error: { message: 'File is too large', code: 'file_too_large' } } },
      ],
    });
    const refusal = runBatchesCommand(
      ['create', file, '--endpoint', '/v1/embeddings', '--model-key', 'k'],
      gateway.io,
    );
    await expect(refusal).rejects.toThrow(GatewayRefusal);
    await expect(refusal).rejects.toThrow('413 file_too_large: File is too large');
    expect(gateway.calls).toHaveLength(1);
  });

  it('watches request_counts until the batch ends, one line per change, then downloads its files', async () => {
    const gateway = fakeGateway({
      'GET /v1/batches/batch_1': [
        { body: batch('validating', 0, 0) },
        { body: batch('in_progress', 1, 0) },
        { body: batch('in_progress', 1, 0) },
        { body: batch('in_progress', 3, 1) },
        { body: batch('completed', 3, 1, { output_file_id: 'file-out', error_file_id: 'file-err' }) },
      ],
      'GET /v1/files/file-out/content': [{ body: '{"custom_id":"a"}\n' }],
      'GET /v1/files/file-err/content': [{ body: '{"custom_id":"b"}\n' }],
    });
    const out = join(dir, 'results');
    const done = await runBatchesCommand(['watch', 'batch_1', '--model-key', 'k', '--out', out], gateway.io);
    expect(done).toMatchObject({
      status: 'completed',
      downloaded: [join(out, 'batch_1.output.jsonl'), join(out, 'batch_1.errors.jsonl')],
    });
    expect(gateway.progress).toEqual([
      'batch_1 validating 0/4 done',
      'batch_1 in_progress 1/4 done',
      'batch_1 in_progress 4/4 done (1 failed)',
      'batch_1 completed 4/4 done (1 failed)',
      `wrote ${join(out, 'batch_1.output.jsonl')}`,
      `wrote ${join(out, 'batch_1.errors.jsonl')}`,
    ]);
    expect(await readFile(join(out, 'batch_1.output.jsonl'), 'utf8')).toBe('{"custom_id":"a"}\n');
    expect(await readFile(join(out, 'batch_1.errors.jsonl'), 'utf8')).toBe('{"custom_id":"b"}\n');
  });

  it('keeps watching through a gateway that is away for a while (unreachable, 503), but not through a 404', async () => {
    const gateway = fakeGateway({
      'GET /v1/batches/batch_1': [
        { body: batch('in_progress', 1, 0) },
        { status: 503, body: { error: { message: 'restarting', code: 'overloaded' } } },
        { status: 599, body: 'unreachable' },
        { body: batch('completed', 4, 0) },
      ],
      'GET /v1/batches/batch_2': [{ status: 404, body: { error: { message: 'No such batch' } } }],
    });
    const done = await runBatchesCommand(['watch', 'batch_1', '--model-key', 'k'], gateway.io);
    expect(done).toMatchObject({ status: 'completed' });
    expect(gateway.progress).toEqual([
      'batch_1 in_progress 1/4 done',
      'batch_1: 503 overloaded: restarting (trying again)',
      'batch_1: 599: unreachable (trying again)',
      'batch_1 completed 4/4 done',
    ]);
    await expect(runBatchesCommand(['watch', 'batch_2', '--model-key', 'k'], gateway.io)).rejects.toThrow(
      '404: No such batch',
    );
  });

  it("reports a failed batch's validation errors and has no files to download", async () => {
    const failed = batch('failed', 0, 0, {
      errors: { data: [{ code: 'invalid_json_line', message: 'not JSON', line: 2 }] },
    });
    const gateway = fakeGateway({ 'GET /v1/batches/batch_1': [{ body: failed }] });
    const done = await runBatchesCommand(['watch', 'batch_1', '--model-key', 'k', '--out', dir], gateway.io);
    expect(done).toMatchObject({ status: 'failed', downloaded: [] });
    expect(gateway.progress).toContain('  line 2: invalid_json_line: not JSON');
  });

  it('lists with limit and after, and cancels', async () => {
    const gateway = fakeGateway({
      'GET /v1/batches': [{ body: { object: 'list', data: [] } }],
      'POST /v1/batches/batch_1/cancel': [{ body: batch('cancelling', 1, 0) }],
    });
    await runBatchesCommand(['list', '--model-key', 'k', '--limit', '5', '--after', 'batch_0'], gateway.io);
    expect(await runBatchesCommand(['cancel', 'batch_1', '--model-key', 'k'], gateway.io)).toMatchObject({
      status: 'cancelling',
    });
    expect(gateway.calls.map((c) => `${c.method} ${c.url}`)).toEqual([
      'GET http://127.0.0.1:8080/v1/batches?limit=5&after=batch_0',
      'POST http://127.0.0.1:8080/v1/batches/batch_1/cancel',
    ]);
  });
});
