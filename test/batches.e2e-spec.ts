import OpenAI, { toFile } from 'openai';
import { Stack } from './support/stack';
import { waitFor } from './support/wait-for';

const ADMIN_TOKEN = `admin-token-${Math.random().toString(36).slice(2)}-for-batches`;

interface ResultLine {
  id: string;
  custom_id: string;
  response: { status_code: number; request_id: string; body: Record<string, unknown> } | null;
  error: { code: string; message: string } | null;
}

const jsonl = (lines: unknown[]): string => lines.map((line) => JSON.stringify(line)).join('\n') + '\n';

/**
 * OpenAI's Batch API through the real processes with the official SDK: files.create, batches.create,
 * retrieve polled to `completed`, files.content of the output; chat and embedding lines on the simulator,
 * each custom_id's result exactly once; and the bad inputs, each OpenAI's error.
 */
describe('batches', () => {
  let stack: Stack;
  let client: OpenAI;

  beforeAll(async () => {
    stack = await Stack.start({
      with: ['embedding-worker'],
      without: ['image-worker'],
      waitForModels: ['sim-chat', 'sim-embed'],
      env: { GATEWAY_ADMIN_TOKEN: ADMIN_TOKEN, BATCH_LEASE_MS: '1500' },
      catalog: {
        models: [
          { id: 'sim-chat', type: 'chat', owned_by: 'model-gateway', backend: { kind: 'simulator' } },
          {
            id: 'sim-embed',
            type: 'embedding',
            owned_by: 'model-gateway',
            dimensions: 16,
            backend: { kind: 'simulator' },
          },
        ],
      },
    });
    client = new OpenAI({ apiKey: stack.apiKey, baseURL: `${stack.baseUrl}/v1`, maxRetries: 0 });
  });

  afterAll(async () => {
    await stack?.stop();
  });

  async function upload(owner: OpenAI, text: string, name = 'input.jsonl'): Promise<string> {
    const file = await owner.files.create({ file: await toFile(Buffer.from(text), name), purpose: 'batch' });
    return file.id;
  }

  async function finished(id: string): Promise<OpenAI.Batches.Batch> {
    return waitFor(`batch ${id} to end`, async () => {
      const batch = await client.batches.retrieve(id);
      return ['completed', 'failed', 'expired', 'cancelled'].includes(batch.status) ? batch : undefined;
    });
  }

  async function resultsOf(fileId: string | null | undefined): Promise<ResultLine[]> {
    if (fileId === null || fileId === undefined) return [];
    const text = await (await client.files.content(fileId)).text();
    return text
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => JSON.parse(line) as ResultLine);
  }

  it('runs a batch of chat lines to completed, each custom_id answered exactly once', async () => {
    const lines = Array.from({ length: 12 }, (_v, i) => ({
      custom_id: `chat-${i}`,
      method: 'POST',
      url: '/v1/chat/completions',
      body: { model: 'sim-chat', max_tokens: 8, messages: [{ role: 'user', content: `question ${i}` }] },
    }));
    const inputFileId = await upload(client, jsonl(lines));
    const created = await client.batches.create({
      input_file_id: inputFileId,
      endpoint: '/v1/chat/completions',
      completion_window: '24h',
      metadata: { suite: 'e2e' },
    });
    expect(created).toMatchObject({
      object: 'batch',
      status: 'validating',
      input_file_id: inputFileId,
      metadata: { suite: 'e2e' },
    });
    const done = await finished(created.id);
    expect(done).toMatchObject({
      status: 'completed',
      request_counts: { total: 12, completed: 12, failed: 0 },
      error_file_id: null,
    });
    expect(done.completed_at).toEqual(expect.any(Number));
    const output = await resultsOf(done.output_file_id);
    expect(output.map((line) => line.custom_id).sort()).toEqual(lines.map((line) => line.custom_id).sort());
    for (const line of output) {
      expect(line.error).toBeNull();
      expect(line.response).toMatchObject({
        status_code: 200,
        request_id: line.id,
        body: { object: 'chat.completion', model: 'sim-chat' },
      });
    }
    const list = await client.batches.list({ limit: 10 });
    expect(list.data.map((batch) => batch.id)).toContain(created.id);
  });

  it('runs a batch of embedding lines; a line its model refuses goes to the error file', async () => {
    const lines = [
      ...Array.from({ length: 6 }, (_v, i) => ({
        custom_id: `emb-${i}`,
        method: 'POST',
        url: '/v1/embeddings',
        body: { model: 'sim-embed', input: [`text ${i}`, `more ${i}`] },
      })),
      {
        custom_id: 'emb-unknown',
        method: 'POST',
        url: '/v1/embeddings',
        body: { model: 'no-such-model', input: 'x' },
      },
    ];
    const batch = await client.batches.create({
      input_file_id: await upload(client, jsonl(lines)),
      endpoint: '/v1/embeddings',
      completion_window: '24h',
    });
    const done = await finished(batch.id);
    expect(done).toMatchObject({
      status: 'completed',
      request_counts: { total: 7, completed: 6, failed: 1 },
    });
    const output = await resultsOf(done.output_file_id);
    expect(output.map((line) => line.custom_id).sort()).toEqual(lines.slice(0, 6).map((l) => l.custom_id));
    expect(output[0]!.response!.body).toMatchObject({ object: 'list', data: [{ index: 0 }, { index: 1 }] });
    const errors = await resultsOf(done.error_file_id);
    expect(errors).toEqual([
      expect.objectContaining({
        custom_id: 'emb-unknown',
        response: expect.objectContaining({
          status_code: 404,
          body: { error: expect.objectContaining({ code: 'model_not_found' }) as unknown },
        }) as unknown,
      }),
    ]);
  });

  it('fails a file with bad lines, reporting each with its line', async () => {
    const good = {
      custom_id: 'a',
      method: 'POST',
      url: '/v1/chat/completions',
      body: { model: 'sim-chat', messages: [{ role: 'user', content: 'hi' }] },
    };
    const text = [
      JSON.stringify(good),
      '{not json',
      JSON.stringify(good),
      JSON.stringify({ ...good, custom_id: 'b', url: '/v1/embeddings' }),
      JSON.stringify({ ...good, custom_id: 'c', body: { model: 'sim-chat', messages: 'nope' } }),
    ].join('\n');
    const batch = await client.batches.create({
      input_file_id: await upload(client, text),
      endpoint: '/v1/chat/completions',
      completion_window: '24h',
    });
    const done = await finished(batch.id);
    expect(done.status).toBe('failed');
    expect(done.errors?.data?.map((error) => [error.code, error.line])).toEqual([
      ['invalid_json_line', 2],
      ['duplicate_custom_id', 3],
      ['invalid_url', 4],
      [expect.any(String), 5],
    ]);
    expect(done.errors?.data?.[3]?.param).toMatch(/^body\.messages/);
  });

  it("refuses bad creates with OpenAI's errors, and hides a batch from other keys", async () => {
    const created = await fetch(`${stack.baseUrl}/admin/keys`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'other' }),
    });
    const other = new OpenAI({
      apiKey: ((await created.json()) as { key: string }).key,
      baseURL: `${stack.baseUrl}/v1`,
      maxRetries: 0,
    });
    const mine = await upload(
      client,
      jsonl([{ custom_id: 'x', method: 'POST', url: '/v1/embeddings', body: {} }]),
    );
    const create = (owner: OpenAI, body: Record<string, unknown>) =>
      owner.batches.create(body as unknown as OpenAI.Batches.BatchCreateParams).then(
        () => null,
        (error: unknown) => error as InstanceType<typeof OpenAI.APIError>,
      );
    const base = { input_file_id: mine, endpoint: '/v1/embeddings', completion_window: '24h' };
    const foreign = await create(other, base);
    expect(foreign).toMatchObject({ status: 400, param: 'input_file_id' });
    expect(await create(client, { ...base, endpoint: '/v1/images/generations' })).toMatchObject({
      status: 400,
      param: 'endpoint',
    });
    expect(await create(client, { ...base, completion_window: '1h' })).toMatchObject({
      status: 400,
      param: 'completion_window',
    });
    const batch = await client.batches.create(base as OpenAI.Batches.BatchCreateParams);
    await expect(other.batches.retrieve(batch.id)).rejects.toMatchObject({ status: 404 });
    await expect(other.batches.cancel(batch.id)).rejects.toMatchObject({ status: 404 });
  });
});
