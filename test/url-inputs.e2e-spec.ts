import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chunk, FakeOpenAIUpstream, sendEvent, startStream } from './support/fake-openai-upstream';
import { freePort } from './support/free-port';
import { Launcher } from './support/launcher';
import { waitFor } from './support/wait-for';

const API_KEY = 'sk-url-inputs-e2e';
/** The four URLs the issue found accepted on every route, then forwarded to the upstream. */
const ISSUE_URLS = [
  'http://169.254.169.254/latest/meta-data/iam/security-credentials/',
  'http://[::ffff:127.0.0.1]/admin.png',
  'http://2130706433/x.png',
  'file:///etc/passwd',
];
const PUBLIC_URL = 'https://example.com/a.png?size=large';
const PRIVATE_URL = 'http://10.0.0.7:8080/cat.png';
const DATA_URL = 'data:image/png;base64,iVBORw0KGgo=';
/** Models of the catalog, one per policy; `url-public` declares none (the default). */
const MODELS = ['url-public', 'url-any', 'url-none'];

interface Answer {
  status: number;
  body: Record<string, unknown>;
}

/** One route: a request whose user turn holds a text part, then an image by `url`. */
interface Route {
  name: string;
  send(model: string, url: string): Promise<Answer>;
  /** The route's name of the image part's URL. */
  param: string;
  /** The refusal as the route's protocol shapes it, with `reason` in its message. */
  refusal(reason: RegExp): unknown;
}

/**
 * The catalog's URL policy (`urlInputs`), through `npm start`'s processes and an `openai` upstream (a
 * scripted OpenAI-compatible server that records what it receives): on chat completions, the Responses API
 * and the Messages API, a URL the model's policy refuses is answered 400 in the route's shape and never
 * reaches the upstream; one it allows reaches it as sent.
 */
describe('URL inputs: the per-model policy on every route', () => {
  let launcher: Launcher;
  let fake: FakeOpenAIUpstream;
  let baseUrl = '';
  let catalogDir = '';

  const post = async (path: string, body: unknown, headers: Record<string, string> = {}): Promise<Answer> => {
    const res = await fetch(`${baseUrl}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${API_KEY}`, 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };

  const openAIRefusal = (param: string) => (reason: RegExp) => ({
    status: 400,
    body: {
      error: {
        message: expect.stringMatching(reason),
        type: 'invalid_request_error',
        param,
        code: 'invalid_image_url',
      },
    },
  });

  const ROUTES: Route[] = [
    {
      name: 'chat completions',
      param: 'messages[0].content[1].image_url.url',
      send: (model, url) =>
        post('/v1/chat/completions', {
          model,
          messages: [
            {
              role: 'user',
              content: [
                { type: 'text', text: 'What is this?' },
                { type: 'image_url', image_url: { url } },
              ],
            },
          ],
        }),
      refusal: openAIRefusal('messages[0].content[1].image_url.url'),
    },
    {
      name: 'the Responses API',
      param: 'input[0].content[1].image_url',
      send: (model, url) =>
        post('/v1/responses', {
          model,
          store: false,
          input: [
            {
              role: 'user',
              content: [
                { type: 'input_text', text: 'What is this?' },
                { type: 'input_image', image_url: url },
              ],
            },
          ],
        }),
      refusal: openAIRefusal('input[0].content[1].image_url'),
    },
    {
      name: 'the Messages API',
      param: 'messages.0.content.1.source.url',
      send: (model, url) =>
        post(
          '/v1/messages',
          {
            model,
            max_tokens: 20,
            messages: [
              {
                role: 'user',
                content: [
                  { type: 'text', text: 'What is this?' },
                  { type: 'image', source: { type: 'url', url } },
                ],
              },
            ],
          },
          { 'x-api-key': API_KEY, 'anthropic-version': '2023-06-01' },
        ),
      refusal: (reason) => ({
        status: 400,
        body: {
          type: 'error',
          error: {
            type: 'invalid_request_error',
            message: expect.stringMatching(
              new RegExp(`^Invalid 'messages\\.0\\.content\\.1\\.source\\.url': .*${reason.source}`),
            ),
          },
        },
      }),
    },
  ];

  /** The image URLs of the upstream's last request. */
  const upstreamImageUrls = (): string[] =>
    (fake.last.body.messages as Array<{ content: unknown }>).flatMap((message) =>
      Array.isArray(message.content)
        ? (message.content as Array<{ type: string; image_url?: { url: string } }>)
            .filter((part) => part.type === 'image_url')
            .map((part) => part.image_url!.url)
        : [],
    );

  beforeAll(async () => {
    fake = await FakeOpenAIUpstream.start();
    fake.handle('/v1/chat/completions', async (_request, res) => {
      startStream(res);
      await sendEvent(res, chunk([{ role: 'assistant', content: 'A cat.' }]));
      await sendEvent(res, chunk([{ finish_reason: 'stop' }]));
      await sendEvent(res, chunk([], { prompt_tokens: 9, completion_tokens: 2 }));
      await sendEvent(res, '[DONE]');
      res.end();
    });
    const backend = { kind: 'openai', baseUrl: fake.baseUrl, upstreamModel: 'upstream-llama' };
    catalogDir = await mkdtemp(join(tmpdir(), 'url-inputs-e2e-'));
    const catalog = join(catalogDir, 'catalog.json');
    await writeFile(
      catalog,
      JSON.stringify({
        models: [
          { id: 'url-public', type: 'chat', owned_by: 'e2e', backend },
          { id: 'url-any', type: 'chat', owned_by: 'e2e', urlInputs: 'any', backend },
          { id: 'url-none', type: 'chat', owned_by: 'e2e', urlInputs: 'none', backend },
        ],
      }),
    );
    const [port, redisPort] = await Promise.all([freePort(), freePort()]);
    baseUrl = `http://127.0.0.1:${port}`;
    launcher = Launcher.start({
      PORT: String(port),
      REDIS_URL: `redis://127.0.0.1:${redisPort}`,
      GATEWAY_API_KEYS: API_KEY,
      KEY_PREFIX: 'urlinputs',
      CATALOG_PATH: catalog,
      DEFAULT_CHAT_MODEL: 'url-public',
    });
    await waitFor(
      `${MODELS.join(', ')} to be listed`,
      async () => {
        if (!launcher.running) throw new Error('npm start exited early');
        const res = await fetch(`${baseUrl}/v1/models`, { headers: { authorization: `Bearer ${API_KEY}` } });
        if (!res.ok) return false;
        const ids = ((await res.json()) as { data: { id: string }[] }).data.map((m) => m.id);
        return MODELS.every((id) => ids.includes(id));
      },
      110_000,
      () => `\n--- output ---\n${launcher.output}`,
    );
  }, 120_000);

  afterAll(async () => {
    await launcher?.stop();
    await fake?.stop();
    if (catalogDir !== '') await rm(catalogDir, { recursive: true, force: true });
  });

  describe.each(ROUTES.map((route) => [route.name, route] as const))('%s', (_name, route) => {
    it.each([
      [ISSUE_URLS[0]!, /169\.254\.169\.254 is a link-local address/],
      [ISSUE_URLS[1]!, /loopback address, embedded in an IPv6 one/],
      [ISSUE_URLS[2]!, /127\.0\.0\.1 is a loopback address/],
      [ISSUE_URLS[3]!, /file: scheme is not accepted/],
    ])(
      "refuses %s under the default policy ('public'), and the upstream never sees it",
      async (url, reason) => {
        const before = fake.work.length;
        expect(await route.send('url-public', url)).toEqual(route.refusal(reason));
        expect(fake.work.length).toBe(before);
      },
    );

    it('passes a public URL to the upstream verbatim', async () => {
      const answer = await route.send('url-public', PUBLIC_URL);
      expect(answer.status).toBe(200);
      expect(upstreamImageUrls()).toEqual([PUBLIC_URL]);
    });

    it("refuses even a public URL under 'none'", async () => {
      const before = fake.work.length;
      expect(await route.send('url-none', PUBLIC_URL)).toEqual(route.refusal(/takes no URL inputs/));
      expect(fake.work.length).toBe(before);
    });

    it("passes a private URL under 'any'", async () => {
      const answer = await route.send('url-any', PRIVATE_URL);
      expect(answer.status).toBe(200);
      expect(upstreamImageUrls()).toEqual([PRIVATE_URL]);
    });

    it('passes a data: URL under every policy', async () => {
      for (const model of MODELS) {
        const answer = await route.send(model, DATA_URL);
        expect({ model, status: answer.status }).toEqual({ model, status: 200 });
        expect(upstreamImageUrls()).toEqual([DATA_URL]);
      }
    });
  });

  it('refuses the URL-carrying parts it takes on no route (input_file, document) as unknown part types', async () => {
    const before = fake.work.length;
    const file = await post('/v1/responses', {
      model: 'url-any',
      store: false,
      input: [{ role: 'user', content: [{ type: 'input_file', file_url: PRIVATE_URL }] }],
    });
    expect(file).toMatchObject({
      status: 400,
      body: { error: { type: 'invalid_request_error', param: 'input[0].content[0].type' } },
    });
    const document = await post(
      '/v1/messages',
      {
        model: 'url-any',
        max_tokens: 20,
        messages: [
          { role: 'user', content: [{ type: 'document', source: { type: 'url', url: PRIVATE_URL } }] },
        ],
      },
      { 'x-api-key': API_KEY, 'anthropic-version': '2023-06-01' },
    );
    expect(document).toMatchObject({
      status: 400,
      body: { type: 'error', error: { type: 'invalid_request_error' } },
    });
    expect(fake.work.length).toBe(before);
  });

  describe('URLs that arrive through expansion (Responses)', () => {
    let stored = '';
    let storedItem = '';

    beforeAll(async () => {
      // A turn with a private URL, stored under 'any', where it was allowed.
      const turn = await post('/v1/responses', {
        model: 'url-any',
        input: [
          {
            role: 'user',
            content: [
              { type: 'input_text', text: 'Keep this.' },
              { type: 'input_image', image_url: PRIVATE_URL },
            ],
          },
        ],
      });
      expect(turn.status).toBe(200);
      stored = turn.body.id as string;
      const items = await fetch(`${baseUrl}/v1/responses/${stored}/input_items`, {
        headers: { authorization: `Bearer ${API_KEY}` },
      });
      storedItem = ((await items.json()) as { data: Array<{ id: string }> }).data[0]!.id;
    });

    it('refuses a stored turn’s URL when the conversation goes on under a stricter model', async () => {
      const before = fake.work.length;
      const answer = await post('/v1/responses', {
        model: 'url-public',
        store: false,
        previous_response_id: stored,
        input: 'And now?',
      });
      expect(answer).toEqual(openAIRefusal('previous_response_id')(/10\.0\.0\.7 is a private address/));
      expect(fake.work.length).toBe(before);
    });

    it('refuses a referenced item’s URL, naming the reference', async () => {
      const before = fake.work.length;
      const answer = await post('/v1/responses', {
        model: 'url-none',
        store: false,
        input: [{ type: 'item_reference', id: storedItem }],
      });
      expect(answer).toEqual(openAIRefusal('input[0].id')(/takes no URL inputs/));
      expect(fake.work.length).toBe(before);
    });

    it('lets the same conversation go on under the model that allows it', async () => {
      const answer = await post('/v1/responses', {
        model: 'url-any',
        store: false,
        previous_response_id: stored,
        input: 'And now?',
      });
      expect(answer.status).toBe(200);
      expect(upstreamImageUrls()).toEqual([PRIVATE_URL]);
    });
  });
});
