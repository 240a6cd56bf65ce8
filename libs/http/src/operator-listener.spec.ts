import { Agent, request } from 'node:http';
import { connect, createServer } from 'node:net';
import Fastify, { type FastifyInstance } from 'fastify';
import { loadGatewayConfig } from '@mgw/config';
import { listenerOfRoute, OperatorListener } from './operator-listener';

describe('listenerOfRoute', () => {
  it.each([
    ['/metrics', 'operator'],
    ['/admin/keys', 'operator'],
    ['/admin/keys/:id', 'operator'],
    ['/admin/usage', 'operator'],
    ['/admin/models', 'operator'],
    ['/healthz', 'both'],
    ['/readyz', 'both'],
    ['/console', 'both'],
    ['/console/*', 'both'],
    ['/v1/chat/completions', 'api'],
    ['/v1/models/:model', 'api'],
    ['/docs', 'api'],
    ['/administrator', 'api'],
    ['/metrics-extra', 'api'],
    ['/consoles', 'api'],
  ] as const)('puts %s on %s', (url, role) => {
    expect(listenerOfRoute(url)).toBe(role);
  });
});

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** The status of `method url`, on a connection of its own unless an agent is given. */
function statusOf(url: string, method = 'GET', agent: Agent | false = false): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method, agent }, (res) => {
      res.resume();
      res.once('end', () => resolve(res.statusCode ?? 0));
    });
    req.once('error', reject);
    req.end();
  });
}

/** How a TCP connection to `port` ends: `connected`, or the error's code. */
function connectionTo(port: number): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve('connected');
    });
    socket.once('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? String(error)));
  });
}

/** A Fastify instance with one route of each kind, as the gateway registers them (after `install`). */
function withRoutes(fastify: FastifyInstance): FastifyInstance {
  for (const url of ['/v1/models', '/admin/keys', '/metrics', '/healthz', '/console']) {
    fastify.get(url, () => ({ url }));
  }
  fastify.post('/v1/chat/completions', () => ({ url: '/v1/chat/completions' }));
  return fastify;
}

describe('OperatorListener', () => {
  it('changes nothing without ADMIN_PORT', async () => {
    const fastify = Fastify();
    expect(OperatorListener.install(fastify, loadGatewayConfig({}))).toBeNull();
    expect(OperatorListener.of(fastify)).toBeNull();
    withRoutes(fastify);
    for (const url of ['/v1/models', '/admin/keys', '/metrics']) {
      expect((await fastify.inject({ url })).statusCode).toBe(200);
    }
    await fastify.close();
  });

  describe('with ADMIN_PORT', () => {
    let fastify: FastifyInstance;
    let api: string;
    let admin: string;

    beforeAll(async () => {
      const config = loadGatewayConfig({
        PORT: '0',
        ADMIN_PORT: String(await freePort()),
        HOST: '127.0.0.1',
      });
      fastify = Fastify();
      const listener = OperatorListener.install(fastify, config);
      expect(OperatorListener.of(fastify)).toBe(listener);
      withRoutes(fastify);
      api = await fastify.listen({ port: 0, host: '127.0.0.1' });
      admin = await listener!.listen();
      expect(admin).toBe(`http://127.0.0.1:${config.adminPort}`);
    });

    afterAll(async () => {
      await fastify?.close();
    });

    it.each([
      ['GET', '/v1/models', 200, 404],
      ['POST', '/v1/chat/completions', 200, 404],
      ['GET', '/admin/keys', 404, 200],
      ['GET', '/metrics', 404, 200],
      ['HEAD', '/metrics', 404, 200],
      ['HEAD', '/v1/models', 200, 404],
      ['GET', '/healthz', 200, 200],
      ['GET', '/console', 200, 200],
    ])(
      'answers %s %s with %d on the API port and %d on the operator port',
      async (method, path, onApi, onAdmin) => {
        expect((await fetch(`${api}${path}`, { method })).status).toBe(onApi);
        expect((await fetch(`${admin}${path}`, { method })).status).toBe(onAdmin);
      },
    );

    it('closes the operator listener with the application', async () => {
      const port = Number(new URL(admin).port);
      expect(await connectionTo(port)).toBe('connected');
      // A kept-alive connection must not hold the close.
      const agent = new Agent({ keepAlive: true });
      expect(await statusOf(`${admin}/metrics`, 'GET', agent)).toBe(200);
      await fastify.close();
      expect(await connectionTo(port)).toBe('ECONNREFUSED');
      agent.destroy();
    });
  });
});
