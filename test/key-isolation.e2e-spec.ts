import { randomBytes } from 'node:crypto';
import { Stack } from './support/stack';
import { waitFor } from './support/wait-for';

const ADMIN_TOKEN = `adm-${randomBytes(16).toString('hex')}`;
/** Enough words for slow-chat to echo for about two seconds. */
const LONG_TEXT = Array.from({ length: 40 }, (_, i) => `word${i}`).join(' ');

const CATALOG = {
  models: [
    {
      id: 'sim-chat',
      type: 'chat',
      owned_by: 'model-gateway',
      aliases: ['gpt-4o-mini', 'claude-haiku-4-5'],
      backend: { kind: 'simulator', mode: 'echo' },
    },
    {
      id: 'slow-chat',
      type: 'chat',
      owned_by: 'model-gateway',
      backend: { kind: 'simulator', mode: 'echo', tokensPerSecond: 20 },
    },
    {
      id: 'sim-image',
      type: 'image',
      owned_by: 'model-gateway',
      aliases: ['dall-e-3'],
      backend: { kind: 'simulator' },
    },
    {
      id: 'sim-embed',
      type: 'embedding',
      owned_by: 'model-gateway',
      aliases: ['text-embedding-3-small'],
      dimensions: 8,
      backend: { kind: 'simulator' },
    },
  ],
};

type Shape = 'openai' | 'anthropic';

interface Route {
  path: string;
  shape: Shape;
  /** The route's type of model, and a valid body for a model of it. */
  type: 'chat' | 'image' | 'embedding';
  body: (model: string) => Record<string, unknown>;
}

/** Every POST route that names a model. */
const ROUTES: Route[] = [
  {
    path: '/v1/chat/completions',
    shape: 'openai',
    type: 'chat',
    body: (model) => ({ model, max_tokens: 4, messages: [{ role: 'user', content: 'hello' }] }),
  },
  {
    path: '/v1/responses',
    shape: 'openai',
    type: 'chat',
    body: (model) => ({ model, input: 'hello', max_output_tokens: 16, store: false }),
  },
  {
    path: '/v1/messages',
    shape: 'anthropic',
    type: 'chat',
    body: (model) => ({ model, max_tokens: 4, messages: [{ role: 'user', content: 'hello' }] }),
  },
  {
    path: '/v1/messages/count_tokens',
    shape: 'anthropic',
    type: 'chat',
    body: (model) => ({ model, messages: [{ role: 'user', content: 'hello' }] }),
  },
  {
    path: '/v1/embeddings',
    shape: 'openai',
    type: 'embedding',
    body: (model) => ({ model, input: 'hello' }),
  },
  {
    path: '/v1/images/generations',
    shape: 'openai',
    type: 'image',
    body: (model) => ({ model, prompt: 'a cat', size: '256x256' }),
  },
];

/** Per type of model: its id and an alias of it in CATALOG. */
const MODEL_OF = {
  chat: { id: 'sim-chat', alias: 'gpt-4o-mini' },
  image: { id: 'sim-image', alias: 'dall-e-3' },
  embedding: { id: 'sim-embed', alias: 'text-embedding-3-small' },
} as const;

/**
 * What one key owns, no other key can reach: every stored route and every reference to a stored object
 * answers another key `404`, word for word as for an id that never existed, and leaves the object as it
 * was. A key scoped to one model gets `404 model_not_found` in the route's own error shape for any other
 * model on every route, and reaches its own model by an alias too.
 */
describe('key isolation: stored objects and model scope on every route', () => {
  let stack: Stack;

  const headersOf = (key: string, json = true): Record<string, string> => ({
    authorization: `Bearer ${key}`,
    ...(json ? { 'content-type': 'application/json' } : {}),
  });
  const request = (key: string, method: string, path: string, body?: unknown) =>
    fetch(`${stack.baseUrl}${path}`, {
      method,
      headers: headersOf(key, body !== undefined),
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  const owner = (method: string, path: string, body?: unknown) => request(stack.apiKey, method, path, body);
  /** A second key: unscoped, the same powers as the stack's, none of its stored objects. */
  let otherKey = '';
  const other = (method: string, path: string, body?: unknown) => request(otherKey, method, path, body);

  async function json<T = Record<string, unknown>>(response: Response): Promise<{ status: number; body: T }> {
    return { status: response.status, body: (await response.json()) as T };
  }

  /** The other key's answer, with `id` written as `<id>` so it compares with an unknown id's answer. */
  async function refusal(response: Response, id: string) {
    const { status, body } = await json(response);
    return { status, body: JSON.parse(JSON.stringify(body).split(id).join('<id>')) as unknown };
  }

  async function createKey(spec: Record<string, unknown>): Promise<string> {
    const res = await fetch(`${stack.baseUrl}/admin/keys`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: `isolation-${randomBytes(3).toString('hex')}`, ...spec }),
    });
    expect(res.status).toBe(201);
    return ((await res.json()) as { key: string }).key;
  }

  beforeAll(async () => {
    stack = await Stack.start({
      catalog: CATALOG,
      with: ['embedding-worker'],
      env: { GATEWAY_ADMIN_TOKEN: ADMIN_TOKEN },
      waitForModels: ['sim-chat', 'slow-chat', 'sim-image', 'sim-embed'],
      appEnv: { gateway: { RESUME_GRACE_MS: '30000' } },
    });
  });

  afterAll(async () => {
    await stack?.stop();
  });

  describe('a second key', () => {
    /** A stored response of the owner: its id, and the id of its output message. */
    let stored: { id: string; itemId: string };
    const unknownResponse = `resp_${randomBytes(24).toString('hex')}`;

    beforeAll(async () => {
      otherKey = await createKey({});
      const created = await json<{ id: string; output: Array<{ id: string }> }>(
        await owner('POST', '/v1/responses', { model: 'sim-chat', input: 'remember this' }),
      );
      expect(created.status).toBe(200);
      stored = { id: created.body.id, itemId: created.body.output[0]!.id };
    });

    it('gets 404 on retrieve, input_items, cancel and delete of a stored response, as for an unknown id; the owner still has it', async () => {
      for (const [method, suffix] of [
        ['GET', ''],
        ['GET', '/input_items'],
        ['POST', '/cancel'],
        ['DELETE', ''],
      ] as const) {
        const foreign = await refusal(await other(method, `/v1/responses/${stored.id}${suffix}`), stored.id);
        const unknown = await refusal(
          await other(method, `/v1/responses/${unknownResponse}${suffix}`),
          unknownResponse,
        );
        expect({ method, suffix, ...foreign }).toEqual({ method, suffix, ...unknown });
        expect(foreign.status).toBe(404);
      }
      const kept = await json<{ id: string; status: string }>(
        await owner('GET', `/v1/responses/${stored.id}`),
      );
      expect(kept).toMatchObject({ status: 200, body: { id: stored.id, status: 'completed' } });
      const items = await json<{ data: unknown[] }>(
        await owner('GET', `/v1/responses/${stored.id}/input_items`),
      );
      expect(items.status).toBe(200);
      expect(items.body.data.length).toBeGreaterThan(0);
    });

    it('gets an unknown id’s answer for previous_response_id (OpenAI’s 400) and item_reference (404) to the owner’s response, which work for the owner', async () => {
      const chained = { model: 'sim-chat', input: 'and then?', previous_response_id: stored.id };
      const referenced = {
        model: 'sim-chat',
        input: [
          { type: 'item_reference', id: stored.itemId },
          { role: 'user', content: 'and then?' },
        ],
      };
      expect((await owner('POST', '/v1/responses', chained)).status).toBe(200);
      expect((await owner('POST', '/v1/responses', referenced)).status).toBe(200);

      const foreignChain = await json<{ error: { code: string | null; param: string | null } }>(
        await other('POST', '/v1/responses', chained),
      );
      // OpenAI answers an unknown previous response with a 400 (not a 404); another key's is unknown to it.
      expect(foreignChain.status).toBe(400);
      expect(foreignChain.body.error).toMatchObject({
        param: 'previous_response_id',
        code: 'previous_response_not_found',
      });
      const unknownChain = await json(
        await other('POST', '/v1/responses', { ...chained, previous_response_id: unknownResponse }),
      );
      expect(JSON.stringify(foreignChain.body).split(stored.id).join('<id>')).toBe(
        JSON.stringify(unknownChain.body).split(unknownResponse).join('<id>'),
      );

      const foreignItem = await refusal(await other('POST', '/v1/responses', referenced), stored.itemId);
      expect(foreignItem.status).toBe(404);
      const unknownItem = `msg_${randomBytes(24).toString('hex')}`;
      const unknown = await refusal(
        await other('POST', '/v1/responses', {
          ...referenced,
          input: [{ type: 'item_reference', id: unknownItem }, referenced.input[1]],
        }),
        unknownItem,
      );
      expect(foreignItem).toEqual(unknown);
    });

    it('gets 404 on GET /v1/responses/{id}?stream=true, cancel and delete of the owner’s running background response, which the owner resumes to its end', async () => {
      const created = await json<{ id: string }>(
        await owner('POST', '/v1/responses', { model: 'slow-chat', input: LONG_TEXT, background: true }),
      );
      expect(created.status).toBe(200);
      const response = created.body;
      const foreign = await refusal(
        await other('GET', `/v1/responses/${response.id}?stream=true`),
        response.id,
      );
      const unknown = await refusal(
        await other('GET', `/v1/responses/${unknownResponse}?stream=true`),
        unknownResponse,
      );
      expect(foreign).toEqual(unknown);
      expect(foreign.status).toBe(404);
      // Nor can it stop the running response.
      expect((await other('POST', `/v1/responses/${response.id}/cancel`)).status).toBe(404);
      expect((await other('DELETE', `/v1/responses/${response.id}`)).status).toBe(404);
      const resumed = await owner('GET', `/v1/responses/${response.id}?stream=true&starting_after=0`);
      expect(resumed.status).toBe(200);
      expect(await resumed.text()).toContain('event: response.completed');
    });

    it('gets 404 on a stored completion, its messages, its update and its delete, and none in its list; the owner’s stays as it was', async () => {
      const created = await json<{ id: string }>(
        await owner('POST', '/v1/chat/completions', {
          model: 'sim-chat',
          store: true,
          metadata: { topic: 'mine' },
          messages: [{ role: 'user', content: 'keep it' }],
        }),
      );
      expect(created.status).toBe(200);
      const id = created.body.id;
      const unknownId = `chatcmpl-${randomBytes(12).toString('hex')}`;
      for (const [method, suffix, body] of [
        ['GET', '', undefined],
        ['GET', '/messages', undefined],
        ['POST', '', { metadata: { topic: 'theirs' } }],
        ['DELETE', '', undefined],
      ] as const) {
        const foreign = await refusal(await other(method, `/v1/chat/completions/${id}${suffix}`, body), id);
        const unknown = await refusal(
          await other(method, `/v1/chat/completions/${unknownId}${suffix}`, body),
          unknownId,
        );
        expect({ method, suffix, ...foreign }).toEqual({ method, suffix, ...unknown });
        expect(foreign.status).toBe(404);
      }
      const list = await json<{ data: Array<{ id: string }> }>(await other('GET', '/v1/chat/completions'));
      expect(list.status).toBe(200);
      expect(list.body.data.map((c) => c.id)).not.toContain(id);
      const kept = await json<{ metadata: Record<string, string> }>(
        await owner('GET', `/v1/chat/completions/${id}`),
      );
      expect(kept).toMatchObject({ status: 200, body: { metadata: { topic: 'mine' } } });
      expect((await owner('GET', `/v1/chat/completions/${id}/messages`)).status).toBe(200);
    });

    it('gets 404 on the resume of the owner’s chat stream; the owner resumes it', async () => {
      const streamed = await fetch(`${stack.baseUrl}/v1/chat/completions`, {
        method: 'POST',
        headers: { ...headersOf(stack.apiKey), 'x-stream-resume': 'on' },
        body: JSON.stringify({
          model: 'sim-chat',
          stream: true,
          messages: [{ role: 'user', content: 'stream me' }],
        }),
      });
      expect(streamed.status).toBe(200);
      const text = await streamed.text();
      const id = /"id":"(chatcmpl-[^"]+)"/.exec(text)![1]!;
      const unknownId = `chatcmpl-${randomBytes(12).toString('hex')}`;
      const foreign = await refusal(await other('GET', `/v1/chat/completions/${id}?stream=true`), id);
      const unknown = await refusal(
        await other('GET', `/v1/chat/completions/${unknownId}?stream=true`),
        unknownId,
      );
      expect(foreign).toEqual(unknown);
      expect(foreign.status).toBe(404);
      const resumed = await owner('GET', `/v1/chat/completions/${id}?stream=true`);
      expect([resumed.status, await resumed.text()]).toEqual([200, expect.stringContaining('[DONE]')]);
    });
  });

  describe('a key scoped to one model', () => {
    it.each(Object.entries(MODEL_OF))(
      'scoped to its %s model: every route answers another model with 404 model_not_found in its own shape, and its model by alias',
      async (type, own) => {
        const key = await createKey({ models: [own.id] });
        for (const route of ROUTES) {
          const others = Object.values(MODEL_OF).filter((model) => model.id !== own.id);
          // Another model of any type, by its id and by its alias: the same answer as a model that is not there.
          for (const model of [...others.flatMap((m) => [m.id, m.alias]), 'no-such-model']) {
            const refused = await json(await request(key, 'POST', route.path, route.body(model)));
            const expected =
              route.shape === 'openai'
                ? {
                    error: {
                      message: `The model \`${model}\` does not exist or you do not have access to it.`,
                      type: 'invalid_request_error',
                      param: 'model',
                      code: 'model_not_found',
                    },
                  }
                : {
                    type: 'error',
                    error: { type: 'not_found_error', message: expect.stringContaining(model) },
                  };
            expect({ route: route.path, model, ...refused }).toEqual({
              route: route.path,
              model,
              status: 404,
              body: expected,
            });
          }
          if (route.type !== type) continue;
          for (const name of [own.id, own.alias]) {
            const served = await request(key, 'POST', route.path, route.body(name));
            expect({ route: route.path, name, status: served.status }).toEqual({
              route: route.path,
              name,
              status: 200,
            });
            await served.arrayBuffer();
          }
        }
      },
      120_000,
    );

    it('lists only its model and its aliases', async () => {
      const key = await createKey({ models: ['sim-chat'] });
      const listed = await waitFor('the scoped list', async () => {
        const res = await request(key, 'GET', '/v1/models');
        return res.ok ? ((await res.json()) as { data: Array<{ id: string }> }) : null;
      });
      expect(listed.data.map((m) => m.id).sort()).toEqual(['claude-haiku-4-5', 'gpt-4o-mini', 'sim-chat']);
    });
  });
});
