import { spawn, type ChildProcess } from 'node:child_process';
import { resolve } from 'node:path';
import { connect } from 'node:net';
import { freePort } from './support/free-port';

const ROOT = resolve(__dirname, '..');

/** The README's `npm start`: the whole stack from one command, with a private Redis, stopped by Ctrl-C. */
describe('npm start', () => {
  let launcher: ChildProcess | undefined;

  afterEach(() => {
    if (launcher && launcher.exitCode === null) launcher.kill('SIGKILL');
  });

  it('starts its own Redis and all four apps, serves requests, and stops everything on SIGINT', async () => {
    const [port, redisPort] = await Promise.all([freePort(), freePort()]);
    const apiKey = 'sk-start-script-test';
    launcher = spawn(process.execPath, ['scripts/start.mjs'], {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH ?? '',
        PORT: String(port),
        REDIS_URL: `redis://127.0.0.1:${redisPort}`,
        GATEWAY_API_KEYS: apiKey,
        KEY_PREFIX: 'starttest',
        NO_COLOR: '1',
        METRICS_PORT: '0', // fixed ports would collide with parallel runs
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    launcher.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    launcher.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const exited = new Promise<number | null>((done) => launcher!.once('exit', (code) => done(code)));

    const deadline = Date.now() + 60_000;
    let models: { data: { id: string }[] } = { data: [] };
    while (
      Date.now() < deadline &&
      !['sim-chat', 'sim-image'].every((id) => models.data.some((m) => m.id === id))
    ) {
      await new Promise((r) => setTimeout(r, 200));
      if (launcher.exitCode !== null) throw new Error(`npm start exited early:\n${output}`);
      try {
        const res = await fetch(`http://127.0.0.1:${port}/v1/models`, {
          headers: { authorization: `Bearer ${apiKey}` },
        });
        if (res.ok) models = (await res.json()) as typeof models;
      } catch {
        // not up yet
      }
    }
    expect(models.data.map((m) => m.id)).toEqual(expect.arrayContaining(['sim-chat', 'sim-image']));
    expect(output).toMatch(/\[gateway\s*\]/);
    expect(output).toMatch(/\[redis\s*\]/);

    const chat = await fetch(`http://127.0.0.1:${port}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ messages: [{ role: 'user', content: 'started by npm start' }] }),
    });
    expect(
      ((await chat.json()) as { choices: { message: { content: string } }[] }).choices[0]!.message.content,
    ).toBe('started by npm start');

    launcher.kill('SIGINT');
    expect(await exited).toBe(0);
    // The private Redis went down with the stack.
    const refused = await new Promise<string>((done) => {
      const socket = connect(redisPort, '127.0.0.1');
      socket.once('connect', () => {
        socket.destroy();
        done('connected');
      });
      socket.once('error', (error: NodeJS.ErrnoException) => done(error.code ?? 'error'));
    });
    expect(refused).toBe('ECONNREFUSED');
  });
});
