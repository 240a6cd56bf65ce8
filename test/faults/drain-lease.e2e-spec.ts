import { readSse } from '../support/sse';
import { Stack } from '../support/stack';
import { FAULT_CATALOG } from './fault-catalog';

// The README's promise for a worker killed after output (error event and [DONE] within 5 s, from the
// gateway's worker lease), which must hold while the gateway drains too.
const STREAM_END_MS = 5_000;

/**
 * The gateway is asked to stop (SIGTERM: it drains open streams) just after the worker of an open stream
 * was killed: the stream still ends with its error event and `[DONE]` when the worker's lease expires,
 * not at the end of the drain timeout.
 */
describe('faults: a worker dies while the gateway drains', () => {
  let stack: Stack;

  beforeAll(async () => {
    stack = await Stack.start({
      catalog: FAULT_CATALOG,
      without: ['image-worker'],
      waitForModels: ['sim-slow'],
      env: { GATEWAY_DRAIN_TIMEOUT_MS: '15000' },
    });
  });

  afterAll(async () => {
    await stack?.stop();
  });

  it('ends the stream of the killed worker with the error event and [DONE] during the drain', async () => {
    const res = await stack.post('/v1/chat/completions', {
      model: 'sim-slow',
      stream: true,
      messages: [{ role: 'user', content: 'a long story, slowly' }],
    });
    expect(res.status).toBe(200);
    const events: string[] = [];
    let killedAt = 0;
    for await (const event of readSse(res.body!)) {
      events.push(event.data);
      if (events.length === 2) {
        killedAt = Date.now();
        stack.processes.get('chat-worker')!.kill('SIGKILL');
        stack.processes.get('gateway')!.kill('SIGTERM');
      }
    }
    const endedIn = Date.now() - killedAt;
    expect(events.at(-1)).toBe('[DONE]');
    expect(JSON.parse(events.at(-2)!)).toMatchObject({ error: { type: 'server_error' } });
    expect(endedIn).toBeLessThan(STREAM_END_MS);
  });
});
