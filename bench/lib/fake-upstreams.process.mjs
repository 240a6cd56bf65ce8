// Fake OpenAI-compatible streaming upstreams in a process of their own, as real engines are: the bench process
// also runs the load's clients, whose work would otherwise delay the upstreams' timers and their accepting of
// requests, and count as idle slots that the gateway did not leave idle.
//   const upstreams = await FakeUpstreams.start([{ name, maxConcurrency, tokenMs }], tokens)
//   upstreams.ports, await upstreams.stats(), await upstreams.reset(), await upstreams.kill(name),
//   await upstreams.revive(name), await upstreams.stop()
// Run as a script (by `start`), it is the child: it serves the upstreams and answers the parent's messages.
import { fork } from 'node:child_process';
import { createServer } from 'node:http';
import { performance } from 'node:perf_hooks';
import { setImmediate } from 'node:timers';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';

/** A fake upstream: streams `tokens` words named after itself; counts its in-flight requests; dies and revives. */
class FakeUpstream {
  inFlight = 0;
  maxInFlight = 0;
  served = 0;
  busyMs = 0;
  arrivals = [];
  sockets = new Set();
  alive = false;

  constructor(spec, tokens) {
    Object.assign(this, spec);
    this.tokens = tokens;
    this.server = createServer((req, res) => this.handle(req, res));
    this.server.on('connection', (socket) => {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
    });
  }

  async listen(port = 0) {
    await new Promise((resolve) => this.server.listen(port, '127.0.0.1', resolve));
    this.port = this.server.address().port;
    this.alive = true;
  }

  async kill() {
    this.alive = false;
    const closed = new Promise((resolve) => this.server.close(resolve));
    for (const socket of this.sockets) socket.destroy();
    await closed;
  }

  handle(req, res) {
    if (req.method === 'GET' && req.url.endsWith('/models')) {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ object: 'list', data: [{ id: 'bench-llama', object: 'model' }] }));
      return;
    }
    req.resume();
    req.on('end', async () => {
      const startedAt = performance.now();
      this.arrivals.push(Date.now());
      this.inFlight++;
      this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
      let open = true;
      res.on('close', () => {
        open = false;
      });
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const send = (data) => res.write(`data: ${typeof data === 'string' ? data : JSON.stringify(data)}\n\n`);
      const delta = (content, finish = null) => ({
        object: 'chat.completion.chunk',
        choices: [{ index: 0, delta: content === null ? {} : { content }, finish_reason: finish }],
      });
      for (let i = 0; i < this.tokens && open; i++) {
        await sleep(this.tokenMs);
        if (open) send(delta(`${this.name}${i} `));
      }
      if (open) {
        send(delta(null, 'stop'));
        send({
          object: 'chat.completion.chunk',
          choices: [],
          usage: { prompt_tokens: 5, completion_tokens: this.tokens },
        });
        send('[DONE]');
        res.end();
        this.served++;
        this.busyMs += performance.now() - startedAt;
      }
      this.inFlight--;
    });
  }

  stats() {
    const { name, maxConcurrency, tokenMs, port, alive, inFlight, maxInFlight, served, busyMs, arrivals } =
      this;
    return { name, maxConcurrency, tokenMs, port, alive, inFlight, maxInFlight, served, busyMs, arrivals };
  }
}

/** The parent's handle on the child process. */
export class FakeUpstreams {
  static async start(specs, tokens) {
    const child = fork(fileURLToPath(import.meta.url), [], {
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    const upstreams = new FakeUpstreams(child);
    const stats = await upstreams.call('start', { specs, tokens });
    upstreams.ports = stats.map((one) => one.port);
    return upstreams;
  }

  constructor(child) {
    this.child = child;
    this.calls = new Map();
    this.next = 0;
    child.on('message', ({ id, result, error }) => {
      const call = this.calls.get(id);
      this.calls.delete(id);
      if (error !== undefined) call?.reject(new Error(error));
      else call?.resolve(result);
    });
    child.on('exit', (code) => {
      for (const call of this.calls.values()) call.reject(new Error(`the fake upstreams exited (${code})`));
      this.calls.clear();
    });
  }

  call(command, args = {}) {
    const id = this.next++;
    return new Promise((resolve, reject) => {
      this.calls.set(id, { resolve, reject });
      this.child.send({ id, command, args });
    });
  }

  /** Each upstream's counters, in the order given to `start`. */
  stats() {
    return this.call('stats');
  }

  /** Zeroes the served count and busy time (the start of a measured window). */
  reset() {
    return this.call('reset');
  }

  /** Closes its port and cuts its connections, as a crash does. */
  kill(name) {
    return this.call('kill', { name });
  }

  /** Listens again on the same port. */
  revive(name) {
    return this.call('revive', { name });
  }

  async stop() {
    await this.call('stop').catch(() => undefined);
    if (this.child.exitCode === null) await new Promise((resolve) => this.child.once('exit', resolve));
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url) && process.send !== undefined) {
  let fakes = [];
  const byName = (name) => fakes.find((fake) => fake.name === name);
  const commands = {
    async start({ specs, tokens }) {
      fakes = specs.map((spec) => new FakeUpstream(spec, tokens));
      for (const fake of fakes) await fake.listen();
      return fakes.map((fake) => fake.stats());
    },
    stats: () => fakes.map((fake) => fake.stats()),
    reset() {
      for (const fake of fakes) Object.assign(fake, { served: 0, busyMs: 0 });
    },
    kill: ({ name }) => byName(name).kill(),
    revive: ({ name }) => byName(name).listen(byName(name).port),
    async stop() {
      for (const fake of fakes) if (fake.alive) await fake.kill();
      setImmediate(() => process.exit(0));
    },
  };
  process.on('message', ({ id, command, args }) => {
    Promise.resolve()
      .then(() => commands[command](args))
      .then(
        (result) => process.send({ id, result }),
        (error) => process.send({ id, error: String(error?.stack ?? error) }),
      );
  });
  // The parent gone, nothing is left to serve.
  process.on('disconnect', () => process.exit(0));
}
