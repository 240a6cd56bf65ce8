import OpenAI from 'openai';
import { readFileSync } from 'node:fs';
import { freePort } from './support/free-port';
import { isAlive, Launcher, probePort } from './support/launcher';
import { YOUNG_GENERATION_OPTION } from './support/stack';
import { waitFor } from './support/wait-for';

/** A file of /proc/<pid>/, '' once the process is gone. */
function readProc(pid: number, file: string): string {
  try {
    return readFileSync(`/proc/${pid}/${file}`, 'utf8');
  } catch {
    return '';
  }
}

/** The README's `npm start`: the whole stack from one command, with a private Redis, stopped by Ctrl-C. */
describe('npm start', () => {
  let launcher: Launcher | undefined;

  afterEach(() => {
    launcher?.kill('SIGKILL');
  });

  it('starts its own Redis and all five apps, serves requests, and stops everything on SIGINT', async () => {
    const [port, redisPort] = await Promise.all([freePort(), freePort()]);
    const apiKey = 'sk-start-script-test';
    const stack = (launcher = Launcher.start({
      PORT: String(port),
      REDIS_URL: `redis://127.0.0.1:${redisPort}`,
      GATEWAY_API_KEYS: apiKey,
      KEY_PREFIX: 'starttest',
    }));

    const models = await waitFor(
      'sim-chat, sim-image and sim-embed to be listed',
      async () => {
        if (!stack.running) throw new Error('npm start exited early');
        const res = await fetch(`http://127.0.0.1:${port}/v1/models`, {
          headers: { authorization: `Bearer ${apiKey}` },
        });
        if (!res.ok) return null;
        const ids = ((await res.json()) as { data: { id: string }[] }).data.map((m) => m.id);
        return ['sim-chat', 'sim-image', 'sim-embed'].every((id) => ids.includes(id)) && ids;
      },
      60_000,
      () => `\n--- output ---\n${stack.output}`,
    );
    expect(models).toEqual(expect.arrayContaining(['sim-chat', 'sim-image', 'sim-embed']));
    // Every app runs with the young generation the image sizes (scripts/start/apps.mjs).
    const apps = stack
      .descendants()
      .map((pid) => ({ pid, cmdline: readProc(pid, 'cmdline'), environ: readProc(pid, 'environ') }))
      .filter(({ cmdline }) => cmdline.includes('dist/apps/'));
    expect(apps).toHaveLength(5);
    for (const { environ } of apps) {
      expect(environ.split('\0')).toContain(`NODE_OPTIONS=${YOUNG_GENERATION_OPTION}`);
    }
    expect(stack.output).toMatch(/\[gateway\s*\]/);
    expect(stack.output).toMatch(/\[redis\s*\]/);
    // Not on a terminal: the apps log JSON, one object per line.
    const appLines = stack.output
      .split('\n')
      .filter((line) => /^\[(gateway|registry|chat-worker)\s*\] /.test(line));
    expect(appLines.length).toBeGreaterThan(5);
    for (const line of appLines)
      expect(() => JSON.parse(line.replace(/^\[[^\]]+\] /, '')) as unknown).not.toThrow();
    // The banner names the configured key and where the console and the docs are.
    await stack.line(/Press Ctrl-C to stop everything/);
    expect(stack.output).toContain(`API key    ${apiKey}  (from GATEWAY_API_KEYS)`);
    expect(stack.output).toContain(`Console    http://127.0.0.1:${port}/console`);
    expect(stack.output).toContain(`API docs   http://127.0.0.1:${port}/docs`);

    const chat = await fetch(`http://127.0.0.1:${port}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ messages: [{ role: 'user', content: 'started by npm start' }] }),
    });
    expect(
      ((await chat.json()) as { choices: { message: { content: string } }[] }).choices[0]!.message.content,
    ).toBe('started by npm start');

    // Embeddings through the embedding worker npm start runs, with the official SDK: floats and base64.
    const client = new OpenAI({ apiKey, baseURL: `http://127.0.0.1:${port}/v1`, maxRetries: 0 });
    const input = ['started by npm start', 'embedded by npm start'];
    const floats = await client.embeddings.create({ model: 'sim-embed', input, encoding_format: 'float' });
    expect(floats.data.map((d) => d.embedding.length)).toEqual([256, 256]);
    const base64 = await client.embeddings.create({ model: 'sim-embed', input, encoding_format: 'base64' });
    const bytes = Buffer.from(base64.data[1]!.embedding, 'base64');
    expect(bytes.readFloatLE(0)).toBe(floats.data[1]!.embedding[0]);

    stack.kill('SIGINT');
    expect((await stack.exited).code).toBe(0);
    // The private Redis went down with the stack.
    expect(await probePort(redisPort)).toBe('ECONNREFUSED');
  });

  it('on a terminal, without a key: readable logs, and a banner with the generated key and the URLs', async () => {
    const [port, redisPort] = await Promise.all([freePort(), freePort()]);
    const stack = (launcher = Launcher.startOnTerminal({
      PORT: String(port),
      REDIS_URL: `redis://127.0.0.1:${redisPort}`,
      KEY_PREFIX: 'starttty',
    }));
    try {
      const [, key] = await stack.line(
        /API key {4}(sk-gw-dev-[A-Za-z0-9_-]{32}) {2}\(generated for this run/,
      );
      expect(stack.output).toContain(`Console    http://127.0.0.1:${port}/console`);
      expect(stack.output).toContain(`API docs   http://127.0.0.1:${port}/docs`);
      expect(stack.output).toContain(`-H "Authorization: Bearer ${key}"`);

      // The key the banner shows is the one the gateway takes; the docs it points to are there.
      const models = await fetch(`http://127.0.0.1:${port}/v1/models`, {
        headers: { authorization: `Bearer ${key}` },
      });
      expect(models.status).toBe(200);
      const docs = await fetch(`http://127.0.0.1:${port}/docs`);
      expect(docs.status).toBe(200);
      expect(await docs.text()).toContain('swagger-ui');

      // One short readable line per log line: time, level, app, message; no JSON, no Nest start-up chatter.
      const gatewayLines = stack.output
        .split(/\r?\n/)
        .filter((line) => line.startsWith('[gateway'))
        .map((line) => line.replace(/^\[gateway\s*\] /, ''));
      expect(gatewayLines).toContainEqual(
        expect.stringMatching(/^\d\d:\d\d:\d\d\.\d{3} INFO {2}gateway listening on /),
      );
      expect(gatewayLines.filter((line) => line.startsWith('{'))).toEqual([]);
      expect(stack.output).not.toContain('Mapped {');
      // The gateway did not generate a key of its own: the launcher gave it the one in the banner.
      expect(stack.output).not.toContain('generated a development key');
    } finally {
      const pids = stack.descendants();
      stack.kill('SIGTERM');
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([stack.exited, new Promise((done) => (timer = setTimeout(done, 15_000)))]);
      clearTimeout(timer);
      for (const pid of pids) if (isAlive(pid)) process.kill(pid, 'SIGKILL');
    }
    expect(await probePort(redisPort)).toBe('ECONNREFUSED');
  });
});
