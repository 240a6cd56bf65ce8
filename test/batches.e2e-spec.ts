import { execFile } from 'node:child_process';
import { createReadStream } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import OpenAI, { toFile } from 'openai';
import OpenAIv6 from 'openai-v6';
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
/** What the scripted upstream answers a prompt with; it refuses a prompt ending so, as vLLM refuses one. */
const upstreamAnswer = (prompt: string) => `upstream: ${prompt}`;
const OVER_CONTEXT = 'a prompt over the upstream context';
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
    if (!prompt.endsWith(OVER_CONTEXT)) return streamText(res, [upstreamAnswer(prompt)]);
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
    refused: { model: 'up-chat', prompt: OVER_CONTEXT },
    refusal: {
      status_code: 400,
      body: { error: expect.objectContaining({ type: 'invalid_request_error', message: REFUSAL }) },
    },
    vector: upstreamVector,
  },
] as const;
type Backend = (typeof BACKENDS)[number];
const UPSTREAM_MODELS: unknown[] = ['up-chat', 'up-embed'];
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

/** Which batch of which client a line is of. */
interface Batch {
  tag: string;
  backend: Backend;
  url: Endpoint;
}

/**
 * A line of `batch`: its custom_id, prompt and texts start with the client's tag, so that each client's
 * lines are told apart on the one upstream.
 */
function line({ tag, backend, url }: Batch, id: string, model: string, text: string | string[]): Line {
  const custom_id = `${tag}:${backend.name}${url}#${id}`;
  if (Array.isArray(text)) {
    const texts = text.map((one) => `${tag} ${one}`);
    return { custom_id, method: 'POST', url, body: { model, input: texts }, texts };
  }
  const prompt = `${tag} ${text}`;
  const body =
    url === '/v1/chat/completions'
      ? { model, messages: [{ role: 'user', content: prompt }] }
      : { model, input: prompt };
  return { custom_id, method: 'POST', url, body, prompt };
}

/** What the JSONL file holds of a line. */
const wire = ({ custom_id, method, url, body }: Line) => ({ custom_id, method, url, body });

/** One batch of a client: three lines answered, then one refused with the refusal's result. */
function plan(tag: string, backend: Backend, url: Endpoint) {
  const batch = { tag, backend, url };
  const answered = [0, 1, 2].map((i) =>
    url === '/v1/embeddings'
      ? line(batch, `${i}`, backend.embed, [`${backend.name} text ${i}`, `${backend.name} more ${i}`])
      : line(batch, `${i}`, backend.chat, `${backend.name} ${url} question ${i}`),
  );
  return url === '/v1/embeddings'
    ? { ...batch, answered, refused: line(batch, 'refused', 'no-such-model', ['x']), refusal: NOT_FOUND }
    : {
        ...batch,
        answered,
        refused: line(batch, 'refused', backend.refused.model, backend.refused.prompt),
        refusal: backend.refusal,
      };
}
type BatchCase = ReturnType<typeof plan>;

/** A client's six batches: each endpoint on each backend. */
const batchesOf = (tag: string): BatchCase[] =>
  BACKENDS.flatMap((backend) => ENDPOINTS.map((url) => plan(tag, backend, url)));

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
            content: [expect.objectContaining({ type: 'output_text', text: backend.answer(line.prompt!) })],
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

/** A batch input file and the endpoint its batch runs on: what batch_roundtrip.py takes as ENDPOINT=FILE. */
interface BatchInput {
  endpoint: Endpoint;
  file: string;
}
/** What a client saw of one batch, in batch_roundtrip.py's shape. */
interface BatchSummary {
  input_file_id: string;
  created: OpenAI.Batches.Batch;
  batch: OpenAI.Batches.Batch;
  output: ResultLine[];
  errors: ResultLine[];
}
/** A client's run: its batches' summaries in the order given, and the ids the key's listing had, all pages. */
interface RoundTrip {
  batches: BatchSummary[];
  listed: string[];
}

type NodeSdk = OpenAI | OpenAIv6;
const ENDED = ['completed', 'failed', 'expired', 'cancelled'];
/** Small, so that a listing takes more than one page. */
const LIST_PAGE = 4;

async function ended(sdk: NodeSdk, id: string): Promise<OpenAI.Batches.Batch> {
  return waitFor(`batch ${id} to end`, async () => {
    const batch = await sdk.batches.retrieve(id);
    return ENDED.includes(batch.status) ? batch : undefined;
  });
}

async function linesOf(sdk: NodeSdk, fileId: string | null | undefined): Promise<ResultLine[]> {
  if (fileId === null || fileId === undefined) return [];
  const text = await (await sdk.files.content(fileId)).text();
  return text
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as ResultLine);
}

/**
 * batch_roundtrip.py's run with a Node SDK: each file uploaded from disk and its batch created, all side
 * by side; each batch polled until it ends and its output and error files read; then the key's listing.
 */
async function roundTripWithNodeSdk(sdk: NodeSdk, inputs: BatchInput[], client: string): Promise<RoundTrip> {
  const batches = await Promise.all(
    inputs.map(async ({ endpoint, file }): Promise<BatchSummary> => {
      const uploaded = await sdk.files.create({ file: createReadStream(file), purpose: 'batch' });
      const created = await sdk.batches.create({
        input_file_id: uploaded.id,
        endpoint,
        completion_window: '24h',
        metadata: { client },
      });
      const batch = await ended(sdk, created.id);
      return {
        input_file_id: uploaded.id,
        created,
        batch,
        output: await linesOf(sdk, batch.output_file_id),
        errors: await linesOf(sdk, batch.error_file_id),
      };
    }),
  );
  const listed: string[] = [];
  for await (const batch of sdk.batches.list({ limit: LIST_PAGE })) listed.push(batch.id);
  return { batches, listed };
}

/**
 * OpenAI's Batch API through the real processes with the official SDKs, Node's (7 and 6) and Python's:
 * files.create from a JSONL file, batches.create, retrieve polled to `completed`, files.content of the
 * output and error files, and the key's listing; chat, Responses and embedding lines on the simulator and
 * on `openai` models in front of a scripted upstream, each custom_id's result exactly once; and the bad
 * inputs, each OpenAI's error.
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
    client = new OpenAI(sdkOptions());
  });

  afterAll(async () => {
    await stack?.stop();
    await upstream?.stop();
  });

  const sdkOptions = (apiKey = stack.apiKey) => ({ apiKey, baseURL: `${stack.baseUrl}/v1`, maxRetries: 0 });

  async function upload(owner: OpenAI, text: string): Promise<string> {
    const file = await owner.files.create({
      file: await toFile(Buffer.from(text), 'input.jsonl'),
      purpose: 'batch',
    });
    return file.id;
  }

  /**
   * The official Python SDK (test/python/.venv, scripts/python-venv.sh) as a real process: one run of
   * test/python/batch_roundtrip.py for all the inputs.
   */
  async function roundTripWithPython(inputs: BatchInput[]): Promise<RoundTrip> {
    // Fails every case of its block, naming the command that makes the venv, when there is none.
    const python = venvPython();
    const env = {
      PATH: process.env.PATH ?? '',
      OPENAI_BASE_URL: `${stack.baseUrl}/v1`,
      OPENAI_API_KEY: stack.apiKey,
    };
    const script = join(PYTHON_DIR, 'batch_roundtrip.py');
    const args = inputs.map(({ endpoint, file }) => `${endpoint}=${file}`);
    const { stdout } = await promisify(execFile)(python, [script, ...args], { env, timeout: 80_000 });
    return JSON.parse(stdout) as RoundTrip;
  }

  const nodeSdk = (major: number, Sdk: new (options: ReturnType<typeof sdkOptions>) => NodeSdk) => ({
    name: `openai Node SDK ${major}`,
    tag: `node-${major}`,
    run: (inputs: BatchInput[]) =>
      roundTripWithNodeSdk(new Sdk(sdkOptions()), inputs, `openai-node-${major}`),
  });

  /**
   * Each client runs its six batches side by side (each endpoint on each backend, three lines answered and
   * one refused), and its batches' metadata names it as `openai-<tag>`.
   */
  describe.each([
    { name: 'openai Python SDK', tag: 'python', run: roundTripWithPython },
    nodeSdk(7, OpenAI),
    nodeSdk(6, OpenAIv6),
  ])('with the $name', (sdk) => {
    const BATCHES = batchesOf(sdk.tag);
    let roundTrip: RoundTrip;

    beforeAll(async () => {
      const dir = await mkdtemp(join(tmpdir(), `batches-${sdk.tag}-e2e-`));
      try {
        const inputs = await Promise.all(
          BATCHES.map(async (batch, i): Promise<BatchInput> => {
            const file = join(dir, `${i}.jsonl`);
            await writeFile(file, jsonl([...batch.answered, batch.refused].map(wire)));
            return { endpoint: batch.url, file };
          }),
        );
        roundTrip = await sdk.run(inputs);
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    }, 90_000);

    it.each(BATCHES)(
      'runs a batch of $url lines on the $backend.name backend, the refused one in the error file',
      (batch) => {
        const summary = roundTrip.batches[BATCHES.indexOf(batch)]!;
        const batchOf = {
          object: 'batch',
          endpoint: batch.url,
          input_file_id: summary.input_file_id,
          metadata: { client: `openai-${sdk.tag}` },
        };
        expect(summary.created).toMatchObject({ ...batchOf, id: summary.batch.id, status: 'validating' });
        expect(summary.batch).toMatchObject({
          ...batchOf,
          status: 'completed',
          completed_at: expect.any(Number),
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

    it('lists each of its batches once, page by page', () => {
      expect(new Set(roundTrip.listed).size).toBe(roundTrip.listed.length);
      expect(roundTrip.listed).toEqual(
        expect.arrayContaining(roundTrip.batches.map((summary) => summary.batch.id)),
      );
    });

    it('sends each line of the openai backend to the upstream exactly once', () => {
      const sent = (path: string) => upstream.work.filter((request) => request.path === path);
      const its = (text: string) => text.startsWith(`${sdk.tag} `);
      const upstreamLines = BATCHES.flatMap((batch) => [...batch.answered, batch.refused]).filter((line) =>
        UPSTREAM_MODELS.includes(line.body.model),
      );
      expect(sent('/v1/chat/completions').map(promptOf).filter(its).sort()).toEqual(
        upstreamLines.flatMap((line) => line.prompt ?? []).sort(),
      );
      expect(
        sent('/v1/embeddings')
          .flatMap((request) => request.body.input as string[])
          .filter(its)
          .sort(),
      ).toEqual(upstreamLines.flatMap((line) => line.texts ?? []).sort());
    });
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
    const done = await ended(client, batch.id);
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
    const other = new OpenAI(sdkOptions(((await created.json()) as { key: string }).key));
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
