import type { WorkerHeartbeatDto } from '@mgw/contracts';
import type { RegistryClient } from './registry.client';
import { WorkerAnnouncer } from './worker.announcer';

describe('WorkerAnnouncer', () => {
  const beat = (ready: boolean): WorkerHeartbeatDto => ({
    instanceId: 'chat-1',
    models: [
      { id: 'pool-chat', type: 'chat/compilations', owned_by: 'x', ...(ready ? {} : { ready: false }) },
    ],
    concurrency: 8,
    hostname: 'h',
    startedAt: 0,
  });

  it('announces a change at once between heartbeats, and only while started', async () => {
    const sent: WorkerHeartbeatDto[] = [];
    const client = {
      heartbeat: jest.fn((dto: WorkerHeartbeatDto) => {
        sent.push(dto);
        return Promise.resolve();
      }),
      deregister: jest.fn(() => Promise.resolve()),
    };
    let ready = true;
    const announcer = new WorkerAnnouncer(client as unknown as RegistryClient, () => beat(ready), 60_000, {
      warn: () => undefined,
    });
    announcer.announceNow();
    expect(sent).toHaveLength(0);
    await announcer.start();
    ready = false;
    announcer.announceNow();
    expect(sent.map((dto) => dto.models[0]!.ready)).toEqual([undefined, false]);
    await announcer.stop();
    announcer.announceNow();
    expect(sent).toHaveLength(2);
    expect(client.deregister).toHaveBeenCalledWith({ instanceId: 'chat-1' });
  });
});
