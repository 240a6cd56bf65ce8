import { freePort } from './support/free-port';
import { Launcher, probePort } from './support/launcher';
import { waitFor } from './support/wait-for';

/** The README's `npm start`: the whole stack from one command, with a private Redis, stopped by Ctrl-C. */
describe('npm start', () => {
  let launcher: Launcher | undefined;

  afterEach(() => {
    launcher?.kill('SIGKILL');
  });

  it('starts its own Redis and all four apps, serves requests, and stops everything on SIGINT', async () => {
    const [port, redisPort] = await Promise.all([freePort(), freePort()]);
    const apiKey = 'sk-start-script-test';
    const stack = (launcher = Launcher.start({
      PORT: String(port),
      REDIS_URL: `redis://127.0.0.1:${redisPort}`,
      GATEWAY_API_KEYS: apiKey,
      KEY_PREFIX: 'starttest',
    }));

    const models = await waitFor(
      'sim-chat and sim-image to be listed',
      async () => {
        if (!stack.running) throw new Error('npm start exited early');
        const res = await fetch(`http://127.0.0.1:${port}/v1/models`, {
          headers: { authorization: `Bearer ${apiKey}` },
        });
        if (!res.ok) return null;
        const ids = ((await res.json()) as { data: { id: string }[] }).data.map((m) => m.id);
        return ['sim-chat', 'sim-image'].every((id) => ids.includes(id)) && ids;
      },
      60_000,
      () => `\n--- output ---\n${stack.output}`,
    );
    expect(models).toEqual(expect.arrayContaining(['sim-chat', 'sim-image']));
    expect(stack.output).toMatch(/\[gateway\s*\]/);
    expect(stack.output).toMatch(/\[redis\s*\]/);

    const chat = await fetch(`http://127.0.0.1:${port}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ messages: [{ role: 'user', content: 'started by npm start' }] }),
    });
    expect(
      ((await chat.json()) as { choices: { message: { content: string } }[] }).choices[0]!.message.content,
    ).toBe('started by npm start');

    stack.kill('SIGINT');
    expect((await stack.exited).code).toBe(0);
    // The private Redis went down with the stack.
    expect(await probePort(redisPort)).toBe('ECONNREFUSED');
  });
});
