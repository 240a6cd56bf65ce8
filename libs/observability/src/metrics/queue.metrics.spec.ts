import { Registry } from 'prom-client';
import { QueueMetrics, type QueueSnapshot } from './queue.metrics';

describe('QueueMetrics', () => {
  const snapshot: QueueSnapshot = {
    model: 'sim-chat',
    waiting: 3,
    active: 2,
    delayed: 1,
    oldestWaitingAgeSeconds: 4.5,
  };
  let now = 0;
  let reads = 0;
  let failing = false;
  let registry: Registry;
  const warnings: string[] = [];

  beforeEach(() => {
    now = 1000;
    reads = 0;
    failing = false;
    registry = new Registry();
    new QueueMetrics(
      registry,
      ['sim-chat', 'sim-image'],
      {
        queues: () => {
          reads++;
          return failing ? Promise.reject(new Error('redis down')) : Promise.resolve([snapshot]);
        },
        workers: () => [
          { model: 'sim-chat', workers: 2 },
          { model: 'undeclared-a', workers: 1 },
          { model: 'undeclared-b', workers: 1 },
        ],
      },
      500,
      { warn: (m) => warnings.push(m) },
      () => now,
    );
  });

  it('renders queue depth by state, the oldest waiting age and live workers', async () => {
    const text = await registry.metrics();
    expect(text).toContain('queue_jobs{model="sim-chat",state="waiting"} 3');
    expect(text).toContain('queue_jobs{model="sim-chat",state="active"} 2');
    expect(text).toContain('queue_jobs{model="sim-chat",state="delayed"} 1');
    expect(text).toContain('queue_oldest_waiting_age_seconds{model="sim-chat"} 4.5');
    expect(text).toContain('registry_workers{model="sim-chat"} 2');
    expect(text).toContain('registry_workers{model="sim-image"} 0');
    expect(text).toContain('registry_workers{model="other"} 2');
  });

  it('shares one Redis reading between scrapes within the cache window', async () => {
    await registry.metrics();
    await registry.metrics();
    expect(reads).toBe(1);
    now += 500;
    await registry.metrics();
    expect(reads).toBe(2);
  });

  it('shows no queue numbers while Redis fails, and reads again on the next scrape', async () => {
    failing = true;
    const text = await registry.metrics();
    expect(text).not.toMatch(/^queue_jobs\{/m);
    expect(warnings.some((w) => w.includes('redis down'))).toBe(true);
    failing = false;
    expect(await registry.metrics()).toContain('queue_jobs{model="sim-chat",state="waiting"} 3');
  });
});
