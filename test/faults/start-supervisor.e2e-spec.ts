import { randomBytes } from 'node:crypto';
import { freePort } from '../support/free-port';
import { isAlive, Launcher, probePort } from '../support/launcher';
import { readSse } from '../support/sse';
import { waitFor } from '../support/wait-for';

const API_KEY = 'sk-start-supervisor-test';
// The README's promise for a worker killed after output: an error event and [DONE] within 5 s (the
// gateway's worker lease is 3 s).
const STREAM_END_MS = 5_000;

/**
 * `npm start` supervises: a killed app is restarted while the others keep serving, a crash loop stops the
 * stack, and a killed launcher leaves no app behind. Each test runs the real scripts/start.mjs with a
 * private Redis of its own (the launcher starts it on a free port) and a key prefix of its own.
 */
describe('faults: npm start supervises its apps', () => {
  let launcher: Launcher | undefined;
  let port: number;
  let redisPort: number;

  async function startStack(env: Record<string, string> = {}): Promise<Launcher> {
    [port, redisPort] = await Promise.all([freePort(), freePort()]);
    launcher = Launcher.start({
      PORT: String(port),
      REDIS_URL: `redis://127.0.0.1:${redisPort}`,
      GATEWAY_API_KEYS: API_KEY,
      KEY_PREFIX: `supervise${randomBytes(4).toString('hex')}`,
      SIM_CHAT_TOKENS_PER_S: '20', // paced: a stream is still open when its worker is killed
      ...env,
    });
    await launcher.line(/The gateway is up/);
    await waitFor('the chat models to be served', async () => {
      const res = await chat({ model: 'sim-chat', messages: [{ role: 'user', content: 'up?' }] });
      return res.ok;
    });
    return launcher;
  }

  function chat(body: object): Promise<Response> {
    return fetch(`http://127.0.0.1:${port}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${API_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
  }

  /** Pids a test saw below the launcher, for the clean-up of a failed test whose launcher is gone. */
  let seen: number[] = [];

  afterEach(() => {
    if (!launcher) return;
    // Whatever a test left running: the launcher and everything below it.
    const pids = [...seen, ...(launcher.running ? launcher.descendants() : [])];
    seen = [];
    launcher.kill('SIGKILL');
    for (const pid of pids) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    launcher = undefined;
  });

  it('restarts a killed chat worker; its stream ends with the error event and [DONE], the rest keeps serving', async () => {
    const stack = await startStack();
    const workerPid = stack.pidOf('chat-worker');
    const gatewayPid = stack.pidOf('gateway');

    const res = await chat({
      model: 'sim-chat-words',
      stream: true,
      max_tokens: 2000,
      messages: [{ role: 'user', content: 'a long answer, please' }],
    });
    expect(res.status).toBe(200);
    const events: string[] = [];
    let killedAt = 0;
    for await (const event of readSse(res.body!)) {
      events.push(event.data);
      if (events.length === 2) {
        killedAt = Date.now();
        process.kill(workerPid, 'SIGKILL');
      }
    }
    const endedAt = Date.now();

    // The stream of the killed worker ends with the error contract, never a clean-looking end.
    expect(events.at(-1)).toBe('[DONE]');
    const error = JSON.parse(events.at(-2)!) as { error?: { type: string } };
    expect(error.error).toBeDefined();
    expect(endedAt - killedAt).toBeLessThan(STREAM_END_MS);

    // The launcher says which app, why, and which restart it is, then starts it again.
    await stack.line(
      new RegExp(`chat-worker \\(pid ${workerPid}\\) was killed by SIGKILL; restart 1 in \\d+ ms`),
    );
    await stack.line(/restarted chat-worker \(pid \d+\)/);
    const newPid = stack.pidOf('chat-worker');
    expect(newPid).not.toBe(workerPid);
    expect(isAlive(newPid)).toBe(true);

    // The rest kept serving, and the restarted worker serves new requests.
    expect(isAlive(gatewayPid)).toBe(true);
    expect(stack.output).not.toContain('stopping everything');
    const after = await waitFor('a chat answer from the restarted worker', async () => {
      const answer = await chat({
        model: 'sim-chat-words',
        max_tokens: 3,
        messages: [{ role: 'user', content: 'still there?' }],
      });
      return answer.ok && ((await answer.json()) as { choices: unknown[] });
    });
    expect(after.choices).toHaveLength(1);

    // Ctrl-C still stops everything in order, and cleanly.
    stack.kill('SIGINT');
    expect(await stack.exited).toEqual({ code: 0, signal: null });
    const stops = stack.output.split('\n').filter((line) => line.includes('] stopping '));
    expect(stops.map((line) => line.replace(/^.*\] stopping /, ''))).toEqual([
      'gateway…',
      'chat-worker, image-worker, embedding-worker…',
      'registry…',
      'redis…',
    ]);
    expect(await probePort(redisPort)).toBe('ECONNREFUSED');
  });

  it('stops the whole stack with a clear message and exit code 1 on a crash loop', async () => {
    const stack = await startStack({ START_RESTART_LIMIT: '2' });
    for (let restart = 1; restart <= 2; restart++) {
      process.kill(stack.pidOf('chat-worker'), 'SIGKILL');
      await stack.line(new RegExp(`restart ${restart} in`));
      await waitFor(
        `restart ${restart} of the chat worker`,
        () => stack.output.match(/restarted chat-worker/g)?.length === restart,
      );
    }
    const pids = (seen = stack.descendants());
    process.kill(stack.pidOf('chat-worker'), 'SIGKILL');

    expect(await stack.exited).toEqual({ code: 1, signal: null });
    expect(stack.output).toMatch(
      /chat-worker was killed by SIGKILL, after 2 restarts within 60 s: a crash loop; stopping everything/,
    );
    expect(pids.filter(isAlive)).toEqual([]);
    expect(await probePort(port)).toBe('ECONNREFUSED');
  });

  it('leaves no app and no Redis running when the launcher itself is killed with -9', async () => {
    const stack = await startStack();
    const pids = (seen = stack.descendants());
    // Four apps, the private redis-server and its tether.
    expect(pids.length).toBeGreaterThanOrEqual(6);
    for (const app of ['registry', 'chat-worker', 'image-worker', 'gateway']) {
      expect(pids).toContain(stack.pidOf(app));
    }

    stack.kill('SIGKILL');
    await stack.exited;
    await waitFor(
      'every process of the stack to end',
      () => pids.every((pid) => !isAlive(pid)),
      // A backstop: each app exits within its 5 s grace of the EOF, later on a CI box busy with other suites.
      30_000,
      () => `; still alive: ${pids.filter(isAlive).join(', ')}`,
    );
    expect(await probePort(port)).toBe('ECONNREFUSED');
    expect(await probePort(redisPort)).toBe('ECONNREFUSED');
  });
});
