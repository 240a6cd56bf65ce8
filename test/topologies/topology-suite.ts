import { readSse, type SseEvent } from '../support/sse';
import type { TestRedis } from '../support/redis-topologies';
import { Stack } from '../support/stack';
import { waitFor } from '../support/wait-for';

export const ADMIN_TOKEN = `admin-${'t'.repeat(8)}-${Math.random().toString(36).slice(2)}-token`;

export const TOPOLOGY_CATALOG = {
  models: [
    { id: 'sim-chat', type: 'chat', owned_by: 'e2e', backend: { kind: 'simulator', mode: 'echo' } },
    {
      id: 'sim-words',
      type: 'chat',
      owned_by: 'e2e',
      backend: { kind: 'simulator', mode: 'words', tokensPerSecond: 200, maxWords: 12 },
    },
    {
      id: 'slow-chat',
      type: 'chat',
      owned_by: 'e2e',
      backend: { kind: 'simulator', mode: 'echo', tokensPerSecond: 10 },
    },
    { id: 'sim-image', type: 'image', owned_by: 'e2e', backend: { kind: 'simulator' } },
  ],
};

/** Error words of a Cluster or a script cache that must never reach a client (nor a log, here). */
export const REDIS_ROUTING_ERRORS = /CROSSSLOT|MOVED \d|ASK \d|NOSCRIPT|same slot/;

export async function startTopologyStack(redis: TestRedis): Promise<Stack> {
  return Stack.start({
    topology: redis,
    catalog: TOPOLOGY_CATALOG,
    env: { GATEWAY_ADMIN_TOKEN: ADMIN_TOKEN },
    waitForModels: TOPOLOGY_CATALOG.models.map((m) => m.id),
  });
}

export async function collect(res: Response): Promise<SseEvent[]> {
  const events: SseEvent[] = [];
  for await (const event of readSse(res.body!)) events.push(event);
  return events;
}

export function textOf(events: readonly SseEvent[]): string {
  return events
    .filter((e) => e.data !== '[DONE]')
    .map(
      (e) =>
        (JSON.parse(e.data) as { choices?: { delta?: { content?: string } }[] }).choices?.[0]?.delta
          ?.content ?? '',
    )
    .join('');
}

/**
 * The core contract on a topology: one shared stack per suite file (the caller's), a representative subset
 * of the single-node suites — answers, streams and their resume, images, stored completions, API keys with
 * exact limits and usage — and no Cluster routing error anywhere.
 */
export function describeCoreContract(name: string, stackOf: () => Stack): void {
  describe(`${name}: the core contract`, () => {
    const admin = (init: RequestInit = {}): RequestInit => ({
      ...init,
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
    });
    const chat = (key: string, body: Record<string, unknown>): Promise<Response> =>
      fetch(`${stackOf().baseUrl}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ messages: [{ role: 'user', content: 'hello there' }], ...body }),
      });
    async function createKey(spec: Record<string, unknown>): Promise<{ id: string; key: string }> {
      const res = await fetch(
        `${stackOf().baseUrl}/admin/keys`,
        admin({ method: 'POST', body: JSON.stringify(spec) }),
      );
      expect(res.status).toBe(201);
      return (await res.json()) as { id: string; key: string };
    }

    it('answers a chat completion and an image', async () => {
      const stack = stackOf();
      const res = await stack.post('/v1/chat/completions', {
        model: 'sim-chat',
        messages: [{ role: 'user', content: 'hello cluster' }],
      });
      expect(res.status).toBe(200);
      const body = (await res.json()) as { choices: { message: { content: string } }[] };
      expect(body.choices[0]!.message.content).toBe('hello cluster');
      const image = await stack.post('/v1/images/generations', {
        model: 'sim-image',
        prompt: 'a lighthouse',
        size: '256x256',
        response_format: 'b64_json',
      });
      expect(image.status).toBe(200);
      expect(
        ((await image.json()) as { data: { b64_json: string }[] }).data[0]!.b64_json.length,
      ).toBeGreaterThan(100);
    });

    it('streams to [DONE], and replays the finished stream from its log', async () => {
      const stack = stackOf();
      const res = await stack.post(
        '/v1/chat/completions',
        { model: 'sim-words', stream: true, messages: [{ role: 'user', content: 'tell a story' }] },
        { headers: stack.headers({ 'x-stream-resume': 'on' }) },
      );
      expect(res.status).toBe(200);
      const requestId = res.headers.get('x-request-id')!;
      const events = await collect(res);
      expect(events.at(-1)!.data).toBe('[DONE]');
      expect(textOf(events).length).toBeGreaterThan(0);
      const replay = await fetch(
        `${stack.baseUrl}/v1/chat/completions/chatcmpl-${requestId}?stream=true&starting_after=0`,
        { headers: stack.headers() },
      );
      expect(replay.status).toBe(200);
      expect(await collect(replay)).toEqual(
        events.slice(1).map((e) => ({ ...e, at: expect.any(Number) as number })),
      );
    });

    it('stores a completion and reads it back', async () => {
      const stack = stackOf();
      const res = await stack.post('/v1/chat/completions', {
        model: 'sim-chat',
        store: true,
        metadata: { topology: name },
        messages: [{ role: 'user', content: 'keep this' }],
      });
      expect(res.status).toBe(200);
      const { id } = (await res.json()) as { id: string };
      const stored = await waitFor('the stored completion', async () => {
        const got = await fetch(`${stack.baseUrl}/v1/chat/completions/${id}`, { headers: stack.headers() });
        return got.status === 200 ? ((await got.json()) as { id: string; metadata: unknown }) : undefined;
      });
      expect(stored).toMatchObject({ id, metadata: { topology: name } });
    });

    it('holds a key to exactly its rpm and its max_concurrent, and counts its usage once', async () => {
      const limited = await createKey({ name: `rpm-${name}`, rpm: 3 });
      const answers = await Promise.all(
        Array.from({ length: 6 }, () => chat(limited.key, { model: 'sim-chat' })),
      );
      const statuses = answers.map((r) => r.status).sort();
      expect(statuses).toEqual([200, 200, 200, 429, 429, 429]);
      await Promise.all(answers.map((r) => r.text()));
      const usage = await waitFor('the usage of the rpm key', async () => {
        const res = await fetch(`${stackOf().baseUrl}/admin/usage?key=${limited.id}`, admin());
        const report = (await res.json()) as { totals: { requests: number } };
        return report.totals.requests === 3 ? report : undefined;
      });
      expect(usage.totals.requests).toBe(3);

      const single = await createKey({ name: `one-${name}`, max_concurrent: 1 });
      const first = await chat(single.key, { model: 'slow-chat', stream: true });
      expect(first.status).toBe(200);
      const second = await chat(single.key, { model: 'sim-chat' });
      expect(second.status).toBe(429);
      await collect(first);
      const third = await chat(single.key, { model: 'sim-chat' });
      expect(third.status).toBe(200);
    }, 30_000);

    it('leaves no Redis routing error in any log', () => {
      const stack = stackOf();
      for (const label of stack.processes.keys()) expect(stack.logs(label)).not.toMatch(REDIS_ROUTING_ERRORS);
    });
  });
}
