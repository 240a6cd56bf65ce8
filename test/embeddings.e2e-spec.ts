import { OpenAIEmbeddings } from '@langchain/openai';
import OpenAI from 'openai';
import { simulatedEmbedding } from '@mgw/backend-simulator';
import { FakeOpenAIUpstream, type UpstreamRequest } from './support/fake-openai-upstream';
import { Stack } from './support/stack';
import { waitFor } from './support/wait-for';

const DIMENSIONS = 64;
const RELAY_DIMENSIONS = 16;

/** Cosine similarity of two unit vectors. */
function similarity(a: readonly number[], b: readonly number[]): number {
  return a.reduce((sum, x, i) => sum + x * b[i]!, 0);
}

function norm(vector: readonly number[]): number {
  return Math.sqrt(similarity(vector, vector));
}

/** The simulator's vector of `text` as the wire carries it (float32). */
function expected(text: string, dimensions = DIMENSIONS): number[] {
  return Array.from(simulatedEmbedding(text, dimensions));
}

function decodeBase64(b64: string): number[] {
  const bytes = Buffer.from(b64, 'base64');
  return Array.from({ length: bytes.length / 4 }, (_, i) => bytes.readFloatLE(i * 4));
}

function toBase64(vector: Float32Array): string {
  return Buffer.from(vector.buffer, vector.byteOffset, vector.byteLength).toString('base64');
}

/** What the relay's upstream answers for a text starting with `raw`: a vector far from unit length. */
function rawVector(text: string): Float32Array {
  const vector = simulatedEmbedding(text, RELAY_DIMENSIONS);
  return vector.map((x, i) => x * 3 + (i % 3) - 1);
}

/**
 * The upstream of the relay model: answers each batch with the simulator's vectors of its texts (a text
 * starting with `raw` gets `rawVector`, as an upstream that does not normalise would send), after
 * `gate` opens (each call waits for it), and records how many inputs each call carried.
 */
class ScriptedEmbeddingUpstream {
  readonly calls: string[][] = [];
  private gate: Promise<void> = Promise.resolve();
  private release: () => void = () => undefined;

  constructor(readonly fake: FakeOpenAIUpstream) {
    fake.handle('/v1/embeddings', async (request: UpstreamRequest, res) => {
      const inputs = request.body.input as string[];
      this.calls.push(inputs);
      await this.gate;
      await new Promise((resolve) => setTimeout(resolve, 10));
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          object: 'list',
          model: request.body.model,
          data: inputs.map((text, index) => ({
            object: 'embedding',
            index,
            embedding: toBase64(
              text.startsWith('raw') ? rawVector(text) : simulatedEmbedding(text, RELAY_DIMENSIONS),
            ),
          })),
          usage: { prompt_tokens: inputs.length, total_tokens: inputs.length },
        }),
      );
    });
  }

  hold(): void {
    this.gate = new Promise((resolve) => (this.release = resolve));
  }

  open(): void {
    this.release();
    this.gate = Promise.resolve();
  }
}

/**
 * POST /v1/embeddings through the real processes (registry, gateway, the embedding worker) with the
 * clients people use: the openai SDK (float and base64), LangChain's OpenAIEmbeddings, and a relay to an
 * OpenAI-compatible upstream that shows the batching.
 */
describe('embeddings', () => {
  let stack: Stack;
  let client: OpenAI;
  let upstream: ScriptedEmbeddingUpstream;

  beforeAll(async () => {
    upstream = new ScriptedEmbeddingUpstream(await FakeOpenAIUpstream.start());
    stack = await Stack.start({
      with: ['embedding-worker'],
      without: ['image-worker'],
      waitForModels: ['sim-chat', 'sim-embed', 'relay-embed'],
      catalog: {
        models: [
          { id: 'sim-chat', type: 'chat', owned_by: 'model-gateway', backend: { kind: 'simulator' } },
          {
            id: 'sim-embed',
            type: 'embedding',
            owned_by: 'model-gateway',
            dimensions: DIMENSIONS,
            contextTokens: 50,
            backend: { kind: 'simulator' },
          },
          {
            id: 'relay-embed',
            type: 'embedding',
            owned_by: 'upstream',
            dimensions: RELAY_DIMENSIONS,
            maxBatchInputs: 128,
            maxBatchDelayMs: 20,
            backend: { kind: 'openai', baseUrl: upstream.fake.baseUrl, maxConcurrency: 1 },
          },
        ],
      },
    });
    client = new OpenAI({ apiKey: stack.apiKey, baseURL: `${stack.baseUrl}/v1`, maxRetries: 0 });
  });

  afterAll(async () => {
    await stack?.stop();
    await upstream?.fake.stop();
  });

  it('lists embedding models with their type, capabilities and dimensions', async () => {
    const page = await client.models.list();
    expect(page.data.find((m) => m.id === 'sim-embed')).toEqual({
      id: 'sim-embed',
      object: 'model',
      created: expect.any(Number),
      owned_by: 'model-gateway',
      type: 'embeddings',
      capabilities: {
        inputCapabilities: { text: true, image: false },
        outputCapabilities: { text: false, image: false },
      },
      dimensions: DIMENSIONS,
    });
  });

  it('answers the openai SDK with each text its own deterministic unit vector, similar texts closer', async () => {
    const texts = ['a cat sat on the mat', 'the cat sat on a mat', 'quarterly stock market report'];
    // The SDK asks for base64 unless told otherwise and decodes it: this is its default path.
    const answer = await client.embeddings.create({ model: 'sim-embed', input: texts });
    expect(answer.object).toBe('list');
    expect(answer.model).toBe('sim-embed');
    expect(answer.data.map((d) => d.index)).toEqual([0, 1, 2]);
    const vectors = answer.data.map((d) => d.embedding);
    vectors.forEach((vector, i) => {
      expect(vector).toHaveLength(DIMENSIONS);
      expect(norm(vector)).toBeCloseTo(1, 5);
      expect(vector).toEqual(expected(texts[i]!));
    });
    expect(similarity(vectors[0]!, vectors[1]!)).toBeGreaterThan(similarity(vectors[0]!, vectors[2]!));
    expect(answer.usage.prompt_tokens).toBeGreaterThan(0);
    expect(answer.usage.total_tokens).toBe(answer.usage.prompt_tokens);
  });

  it('gives floats and base64 of the same vector, and fewer dimensions when asked', async () => {
    const floats = await client.embeddings.create({
      model: 'sim-embed',
      input: 'hello',
      encoding_format: 'float',
    });
    const base64 = await client.embeddings.create({
      model: 'sim-embed',
      input: 'hello',
      encoding_format: 'base64',
    });
    expect(typeof base64.data[0]!.embedding).toBe('string');
    expect(decodeBase64(base64.data[0]!.embedding)).toEqual(floats.data[0]!.embedding);
    const short = await client.embeddings.create({ model: 'sim-embed', input: 'hello', dimensions: 8 });
    expect(short.data[0]!.embedding).toHaveLength(8);
    expect(norm(short.data[0]!.embedding)).toBeCloseTo(1, 5);
    const ids = await client.embeddings.create({
      model: 'sim-embed',
      input: [
        [1, 2, 3],
        [4, 5],
      ],
    });
    expect(ids.data).toHaveLength(2);
    expect(ids.usage.prompt_tokens).toBe(5);
  });

  it('serves LangChain OpenAIEmbeddings: embedDocuments and embedQuery', async () => {
    const embeddings = new OpenAIEmbeddings({
      model: 'sim-embed',
      apiKey: stack.apiKey,
      configuration: { baseURL: `${stack.baseUrl}/v1` },
      maxRetries: 0,
    });
    const documents = await embeddings.embedDocuments(['first document', 'second document']);
    expect(documents).toHaveLength(2);
    expect(documents[0]).toEqual(expected('first document'));
    const query = await embeddings.embedQuery('first document');
    expect(query).toEqual(documents[0]);
  });

  it.each([
    ['an empty string', { input: '' }, 'input'],
    ['an empty string in a list', { input: ['ok', ''] }, 'input[1]'],
    ['no inputs', { input: [] }, 'input'],
    ['too many inputs', { input: Array.from({ length: 2049 }, (_, i) => `t${i}`) }, 'input'],
    ['an empty token array', { input: [[]] }, 'input[0]'],
    ['a token id that is no integer', { input: [1, 2.5] }, 'input[1]'],
    ['more dimensions than the model has', { input: 'x', dimensions: DIMENSIONS + 1 }, 'dimensions'],
    ['an unknown encoding', { input: 'x', encoding_format: 'hex' }, 'encoding_format'],
    ['token ids over the context', { input: Array.from({ length: 51 }, (_, i) => i) }, 'input'],
    ['a text over the context (counted by the worker)', { input: 'word '.repeat(80) }, 'input'],
  ])('refuses %s with a 400 naming the parameter', async (_what, body, param) => {
    const res = await stack.post('/v1/embeddings', { model: 'sim-embed', ...body });
    expect(res.status).toBe(400);
    const { error } = (await res.json()) as { error: { type: string; param: string } };
    expect(error).toMatchObject({ type: 'invalid_request_error', param });
  });

  it("gives OpenAI's errors for a model of the wrong type, both ways", async () => {
    const res = await stack.post('/v1/embeddings', { model: 'sim-chat', input: 'x' });
    expect(res.status).toBe(403);
    expect(await res.json()).toEqual({
      error: {
        message: 'You are not allowed to generate embeddings from this model',
        type: 'invalid_request_error',
        param: 'model',
        code: null,
      },
    });
    await expect(
      client.chat.completions.create({ model: 'sim-embed', messages: [{ role: 'user', content: 'hi' }] }),
    ).rejects.toMatchObject({ status: 404, param: 'model' });
  });

  it("relays an upstream's vector exactly as sent, and cut and rescaled to unit length only when fewer dimensions are asked", async () => {
    const text = 'raw vector of an upstream that does not normalise';
    const sent = rawVector(text);
    expect(norm(Array.from(sent))).toBeGreaterThan(2);
    const floats = await client.embeddings.create({
      model: 'relay-embed',
      input: text,
      encoding_format: 'float',
    });
    expect(floats.data[0]!.embedding).toEqual(Array.from(sent));
    const base64 = await client.embeddings.create({
      model: 'relay-embed',
      input: text,
      encoding_format: 'base64',
    });
    expect(base64.data[0]!.embedding).toBe(toBase64(sent));
    const all = await client.embeddings.create({
      model: 'relay-embed',
      input: text,
      encoding_format: 'float',
      dimensions: RELAY_DIMENSIONS,
    });
    expect(all.data[0]!.embedding).toEqual(Array.from(sent));
    const short = await client.embeddings.create({
      model: 'relay-embed',
      input: text,
      encoding_format: 'float',
      dimensions: 4,
    });
    const cut = short.data[0]!.embedding;
    expect(cut).toHaveLength(4);
    expect(norm(cut)).toBeCloseTo(1, 5);
    const scale = 1 / norm(Array.from(sent.subarray(0, 4)));
    cut.forEach((x, i) => expect(x).toBeCloseTo(sent[i]! * scale, 5));
  });

  it('batches 500 concurrent single-input requests into far fewer upstream calls, each client getting its own vector', async () => {
    upstream.calls.length = 0;
    const texts = Array.from({ length: 500 }, (_, i) => `request number ${i} about topic ${i % 17}`);
    const answers = await Promise.all(
      texts.map(async (text) => {
        const res = await stack.post('/v1/embeddings', {
          model: 'relay-embed',
          input: text,
          encoding_format: 'float',
        });
        expect(res.status).toBe(200);
        return ((await res.json()) as { data: { embedding: number[] }[] }).data[0]!.embedding;
      }),
    );
    // Its own text's vector, exactly as the upstream sent it, not a neighbour's.
    answers.forEach((vector, i) => {
      expect(vector).toEqual(expected(texts[i]!, RELAY_DIMENSIONS));
      expect(similarity(vector, expected(texts[(i + 1) % 500]!, RELAY_DIMENSIONS))).toBeLessThan(0.999);
    });
    const sent = upstream.calls.flat();
    expect(sent).toHaveLength(500);
    expect(new Set(sent)).toEqual(new Set(texts));
    process.stdout.write(`500 requests reached the upstream in ${upstream.calls.length} calls\n`);
    expect(upstream.calls.length).toBeLessThanOrEqual(50);
  });

  it("removes only a cancelled client's input from the batch it waited for", async () => {
    upstream.calls.length = 0;
    upstream.hold();
    // The first call holds the upstream's one slot: the requests after it gather for the next call.
    const first = stack.post('/v1/embeddings', { model: 'relay-embed', input: 'first' });
    await waitFor('the first upstream call', () => upstream.calls.length === 1, 10_000);
    const stayers = ['stays one', 'stays two', 'stays three'];
    const staying = stayers.map((input) => stack.post('/v1/embeddings', { model: 'relay-embed', input }));
    const leaving = new AbortController();
    const left = stack
      .post('/v1/embeddings', { model: 'relay-embed', input: 'leaves' }, { signal: leaving.signal })
      .catch((error: unknown) => error);
    // Long enough for every job to be taken and waiting in the batcher.
    await new Promise((resolve) => setTimeout(resolve, 500));
    leaving.abort();
    await left;
    // Long enough for the cancel to reach the worker.
    await new Promise((resolve) => setTimeout(resolve, 500));
    upstream.open();
    expect((await first).status).toBe(200);
    const answers = await Promise.all(staying);
    for (const [i, res] of answers.entries()) {
      expect(res.status).toBe(200);
      const body = (await res.json()) as { data: { embedding: number[] }[] };
      expect(similarity(body.data[0]!.embedding, expected(stayers[i]!, RELAY_DIMENSIONS))).toBeCloseTo(1, 5);
    }
    expect(upstream.calls).toHaveLength(2);
    expect([...upstream.calls[1]!].sort()).toEqual([...stayers].sort());
  });
});
