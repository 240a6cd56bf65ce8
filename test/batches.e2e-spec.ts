import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import OpenAI, { toFile } from 'openai';
import { simulatedEmbedding } from '@mgw/backend-simulator';
import { FakeOpenAIUpstream, json, streamText, type UpstreamRequest } from './support/fake-openai-upstream';
import { PYTHON_DIR, venvPython } from './support/python-venv';
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

const DIMENSIONS = 16;
/** What the scripted upstream answers a prompt with, and the prompt it refuses as vLLM refuses one. */
const upstreamAnswer = (prompt: string) => `upstream: ${prompt}`;
const REFUSED_PROMPT = 'a prompt over the upstream context';
const REFUSAL = "This model's maximum context length is 4096 tokens.";
/** The upstream's vector of a text, unlike the simulator's of it. */
const upstreamVector = (text: string) => Array.from(simulatedEmbedding(`upstream ${text}`, DIMENSIONS));
const promptOf = (request: UpstreamRequest) =>
  (request.body.messages as Array<{ content: string }>).at(-1)!.content;

/** The OpenAI-compatible server behind the `openai` models: it answers each prompt and text its own way. */
async function scriptedUpstream(): Promise<FakeOpenAIUpstream> {
  const fake = await FakeOpenAIUpstream.start();
  fake.handle('/v1/chat/completions', (request, res) => {
    const prompt = promptOf(request);
    if (prompt !== REFUSED_PROMPT) return streamText(res, [upstreamAnswer(prompt)]);
    json(res, 400, {
      error: { message: REFUSAL, type: 'invalid_request_error', param: 'messages', code: null },
    });
  });
  fake.handle('/v1/embeddings', (request, res) => {
    const inputs = request.body.input as string[];
    json(res, 200, {
      object: 'list',
      model: request.body.model,
      data: inputs.map((text, index) => ({ object: 'embedding', index, embedding: upstreamVector(text) })),
      usage: { prompt_tokens: inputs.length, total_tokens: inputs.length },
    });
  });
  return fake;
}

/**
 * OpenAI's Batch API through the real processes with the official SDKs, Node's and Python's: files.create,
 * batches.create, retrieve polled to `completed`, files.content of the output and error files; chat,
 * Responses and embedding lines on the simulator and on `openai` models in front of a scripted upstream,
 * each custom_id's result exactly once; and the bad inputs, each OpenAI's error.
 */
describe('batches', () => {
  let stack: Stack;
  let client: OpenAI;

  let upstream: FakeOpenAIUpstream;

  beforeAll(async () => {
    upstream = await scriptedUpstream();
    stack = await Stack.start({
      with: ['embedding-worker'],
      without: ['image-worker'],
      waitForModels: ['sim-chat', 'sim-embed', 'up-chat', 'up-embed'],
      env: { GATEWAY_ADMIN_TOKEN: ADMIN_TOKEN, BATCH_LEASE_MS: '1500' },
      catalog: {
        models: [
          { id: 'sim-chat', type: 'chat', owned_by: 'model-gateway', backend: { kind: 'simulator' } },
          {
            id: 'sim-embed',
            type: 'embedding',
            owned_by: 'model-gateway',
            dimensions: DIMENSIONS,
            backend: { kind: 'simulator' },
          },
          {
            id: 'up-chat',
            type: 'chat',
            owned_by: 'upstream',
            backend: { kind: 'openai', baseUrl: upstream.baseUrl, upstreamModel: 'upstream-llama' },
          },
          {
            id: 'up-embed',
            type: 'embedding',
            owned_by: 'upstream',
            dimensions: DIMENSIONS,
            backend: { kind: 'openai', baseUrl: upstream.baseUrl },
          },
        ],
      },
    });
    client = new OpenAI({ apiKey: stack.apiKey, baseURL: `${stack.baseUrl}/v1`, maxRetries: 0 });
  });

  afterAll(async () => {
    await stack?.stop();
    await upstream?.stop();
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

  /**
   * The official Python SDK (test/python/.venv, scripts/python-venv.sh) as a real process: one run of
   * test/python/batch_roundtrip.py uploads a file per endpoint and backend, creates their batches, polls
   * them to the end and reads their output and error files. Each batch has one line that fails.
   */
  describe('with the openai Python SDK', () => {
    const NOT_FOUND = {
      status_code: 404,
      body: { error: expect.objectContaining({ code: 'model_not_found' }) },
    };
    const BACKENDS = [
      {
        name: 'simulator',
        chat: 'sim-chat',
        embed: 'sim-embed',
        // It echoes each prompt, and fails no prompt: its refused line names a model of no catalog.
        answer: (prompt: string) => prompt,
        refused: { model: 'no-such-model', prompt: 'x' },
        refusal: NOT_FOUND,
        vector: (text: string) => Array.from(simulatedEmbedding(text, DIMENSIONS)),
      },
      {
        name: 'openai',
        chat: 'up-chat',
        embed: 'up-embed',
        answer: upstreamAnswer,
        refused: { model: 'up-chat', prompt: REFUSED_PROMPT },
        refusal: {
          status_code: 400,
          body: { error: expect.objectContaining({ type: 'invalid_request_error', message: REFUSAL }) },
        },
        vector: upstreamVector,
      },
    ] as const;
    type Backend = (typeof BACKENDS)[number];
    const ENDPOINTS = ['/v1/chat/completions', '/v1/responses', '/v1/embeddings'] as const;
    type Endpoint = (typeof ENDPOINTS)[number];

    /** A batch line, with the prompt (chat, Responses) or the texts (embeddings) it carries. */
    interface Line {
      custom_id: string;
      method: 'POST';
      url: Endpoint;
      body: Record<string, unknown>;
      prompt?: string;
      texts?: string[];
    }
    interface PythonSummary {
      input_file_id: string;
      batch: OpenAI.Batches.Batch;
      output: ResultLine[];
      errors: ResultLine[];
    }

    const line = (
      backend: Backend,
      url: Endpoint,
      id: string,
      model: string,
      text: string | string[],
    ): Line => {
      const custom_id = `${backend.name}${url}#${id}`;
      if (Array.isArray(text))
        return { custom_id, method: 'POST', url, body: { model, input: text }, texts: text };
      const body =
        url === '/v1/chat/completions'
          ? { model, messages: [{ role: 'user', content: text }] }
          : { model, input: text };
      return { custom_id, method: 'POST', url, body, prompt: text };
    };

    /** What the JSONL file holds of a line. */
    const wire = ({ custom_id, method, url, body }: Line) => ({ custom_id, method, url, body });

    /** Three lines answered, then one refused with the refusal's result. */
    function plan(backend: Backend, url: Endpoint): { answered: Line[]; refused: Line; refusal: unknown } {
      const answered = [0, 1, 2].map((i) =>
        url === '/v1/embeddings'
          ? line(backend, url, `${i}`, backend.embed, [
              `${backend.name} text ${i}`,
              `${backend.name} more ${i}`,
            ])
          : line(backend, url, `${i}`, backend.chat, `${backend.name} ${url} question ${i}`),
      );
      return url === '/v1/embeddings'
        ? { answered, refused: line(backend, url, 'refused', 'no-such-model', ['x']), refusal: NOT_FOUND }
        : {
            answered,
            refused: line(backend, url, 'refused', backend.refused.model, backend.refused.prompt),
            refusal: backend.refusal,
          };
    }

    /** The body `line` gets from `backend`: its own answer, each of its texts its own vector. */
    function answerOf(backend: Backend, line: Line): unknown {
      switch (line.url) {
        case '/v1/chat/completions':
          return {
            object: 'chat.completion',
            model: backend.chat,
            choices: [
              {
                index: 0,
                message: { role: 'assistant', content: backend.answer(line.prompt!) },
                finish_reason: 'stop',
              },
            ],
          };
        case '/v1/responses':
          return {
            object: 'response',
            status: 'completed',
            model: backend.chat,
            output: [
              expect.objectContaining({
                type: 'message',
                role: 'assistant',
                content: [
                  expect.objectContaining({ type: 'output_text', text: backend.answer(line.prompt!) }),
                ],
              }),
            ],
          };
        case '/v1/embeddings':
          return {
            object: 'list',
            model: backend.embed,
            data: line.texts!.map((text, index) => ({
              object: 'embedding',
              index,
              embedding: backend.vector(text),
            })),
          };
      }
    }

    const CASES = BACKENDS.flatMap((backend) =>
      ENDPOINTS.map((url) => ({ backend, url, ...plan(backend, url) })),
    );
    const summaries = new Map<(typeof CASES)[number], PythonSummary>();

    beforeAll(async () => {
      // Fails every case of this block, naming the command that makes the venv, when there is none.
      const python = venvPython();
      const dir = await mkdtemp(join(tmpdir(), 'batches-python-e2e-'));
      try {
        const args = await Promise.all(
          CASES.map(async (batch, i) => {
            const file = join(dir, `${i}.jsonl`);
            await writeFile(file, jsonl([...batch.answered, batch.refused].map(wire)));
            return `${batch.url}=${file}`;
          }),
        );
        const env = {
          PATH: process.env.PATH ?? '',
          OPENAI_BASE_URL: `${stack.baseUrl}/v1`,
          OPENAI_API_KEY: stack.apiKey,
        };
        const script = join(PYTHON_DIR, 'batch_roundtrip.py');
        const { stdout } = await promisify(execFile)(python, [script, ...args], { env, timeout: 80_000 });
        const { batches } = JSON.parse(stdout) as { batches: PythonSummary[] };
        CASES.forEach((batch, i) => summaries.set(batch, batches[i]!));
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    }, 90_000);

    it.each(CASES)(
      'runs a batch of $url lines on the $backend.name backend, the refused one in the error file',
      (batch) => {
        const summary = summaries.get(batch)!;
        expect(summary.batch).toMatchObject({
          object: 'batch',
          endpoint: batch.url,
          input_file_id: summary.input_file_id,
          status: 'completed',
          metadata: { client: 'openai-python' },
          request_counts: { total: 4, completed: 3, failed: 1 },
          output_file_id: expect.any(String),
          error_file_id: expect.any(String),
        });
        expect(summary.output.map((result) => result.custom_id).sort()).toEqual(
          batch.answered.map((line) => line.custom_id),
        );
        for (const result of summary.output) {
          const line = batch.answered.find((candidate) => candidate.custom_id === result.custom_id)!;
          expect(result).toMatchObject({
            error: null,
            response: { status_code: 200, request_id: result.id, body: answerOf(batch.backend, line) },
          });
        }
        expect(summary.errors).toEqual([
          expect.objectContaining({
            custom_id: batch.refused.custom_id,
            response: expect.objectContaining(batch.refusal),
          }),
        ]);
      },
    );

    it('sends each line of the openai backend to the upstream exactly once', () => {
      const sent = (path: string) => upstream.work.filter((request) => request.path === path);
      const lines = CASES.filter((batch) => batch.backend.name === 'openai').flatMap((batch) => [
        ...batch.answered,
        batch.refused,
      ]);
      const upstreamLines = lines.filter(
        (line) => line.body.model === 'up-chat' || line.body.model === 'up-embed',
      );
      expect(sent('/v1/chat/completions').map(promptOf).sort()).toEqual(
        upstreamLines.flatMap((line) => line.prompt ?? []).sort(),
      );
      expect(
        sent('/v1/embeddings')
          .flatMap((request) => request.body.input as string[])
          .sort(),
      ).toEqual(upstreamLines.flatMap((line) => line.texts ?? []).sort());
    });
  });
});
