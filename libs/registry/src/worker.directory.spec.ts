import { parseCatalog, type Catalog } from '@mgw/config';
import {
  supportedChatParametersOf,
  validateDto,
  WorkerHeartbeatDto,
  type ServedModelDto,
} from '@mgw/contracts';
import { WorkerDirectory } from './worker.directory';

const TTL_MS = 6_000;
const SIM_CHAT_PARAMETERS = supportedChatParametersOf('simulator');
const START_MS = 1_700_000_000_000;

const catalog: Catalog = parseCatalog(
  JSON.stringify({
    models: [
      {
        id: 'sim-image',
        type: 'image',
        owned_by: 'acme',
        created: 1_600_000_000,
        backend: { kind: 'simulator' },
      },
      {
        id: 'sim-chat',
        type: 'chat',
        owned_by: 'model-gateway',
        created: 1_650_000_000,
        backend: { kind: 'simulator' },
      },
    ],
  }),
  'test-catalog.json',
);

const simChat: ServedModelDto = { id: 'sim-chat', type: 'chat/compilations', owned_by: 'model-gateway' };
const simImage: ServedModelDto = { id: 'sim-image', type: 'images/generations', owned_by: 'acme' };

function beat(instanceId: string, models: ServedModelDto[], concurrency = 4): WorkerHeartbeatDto {
  return { instanceId, models, concurrency, hostname: 'host-1', startedAt: 1_700_000_000 };
}

describe('WorkerDirectory', () => {
  let clock: number;
  let directory: WorkerDirectory;

  const advance = (ms: number) => {
    clock += ms;
  };

  beforeEach(() => {
    clock = START_MS;
    directory = new WorkerDirectory(catalog, TTL_MS, () => clock);
  });

  it('lists every declared model with no live capacity before any heartbeat', () => {
    expect(directory.list()).toEqual([
      {
        id: 'sim-chat',
        type: 'chat/compilations',
        owned_by: 'model-gateway',
        created: 1_650_000_000,
        supportedParameters: SIM_CHAT_PARAMETERS,
        liveWorkers: 0,
        readyWorkers: 0,
        concurrency: 0,
      },
      {
        id: 'sim-image',
        type: 'images/generations',
        owned_by: 'acme',
        created: 1_600_000_000,
        liveWorkers: 0,
        readyWorkers: 0,
        concurrency: 0,
      },
    ]);
    expect(directory.workerCount).toBe(0);
  });

  it('makes a model live with the concurrency of the worker that heartbeats for it', () => {
    directory.heartbeat(beat('chat-1', [simChat], 8));

    const entries = directory.list();
    expect(entries.find((e) => e.id === 'sim-chat')).toMatchObject({ liveWorkers: 1, concurrency: 8 });
    expect(entries.find((e) => e.id === 'sim-image')).toMatchObject({ liveWorkers: 0, concurrency: 0 });
    expect(directory.workerCount).toBe(1);
  });

  it('keeps the catalog metadata of a declared model once it is live', () => {
    directory.heartbeat(beat('chat-1', [{ ...simChat, owned_by: 'someone-else' }], 2));

    expect(directory.list().find((e) => e.id === 'sim-chat')).toEqual({
      id: 'sim-chat',
      type: 'chat/compilations',
      owned_by: 'model-gateway',
      created: 1_650_000_000,
      supportedParameters: SIM_CHAT_PARAMETERS,
      liveWorkers: 1,
      readyWorkers: 1,
      concurrency: 2,
    });
  });

  it('sums live workers and concurrency over the workers serving one model', () => {
    directory.heartbeat(beat('chat-1', [simChat], 8));
    directory.heartbeat(beat('chat-2', [simChat], 3));

    expect(directory.list().find((e) => e.id === 'sim-chat')).toMatchObject({
      liveWorkers: 2,
      readyWorkers: 2,
      concurrency: 11,
    });
  });

  it('counts a worker once per model it serves', () => {
    directory.heartbeat(beat('both-1', [simChat, simImage], 5));

    const entries = directory.list();
    expect(entries.find((e) => e.id === 'sim-chat')).toMatchObject({ liveWorkers: 1, concurrency: 5 });
    expect(entries.find((e) => e.id === 'sim-image')).toMatchObject({ liveWorkers: 1, concurrency: 5 });
  });

  it('replaces a worker on a repeated heartbeat instead of counting it again', () => {
    directory.heartbeat(beat('chat-1', [simChat], 8));
    directory.heartbeat(beat('chat-1', [simChat], 2));

    expect(directory.list().find((e) => e.id === 'sim-chat')).toMatchObject({
      liveWorkers: 1,
      readyWorkers: 1,
      concurrency: 2,
    });
    expect(directory.workerCount).toBe(1);
  });

  it('drops a model from a worker when its next heartbeat no longer lists it', () => {
    directory.heartbeat(beat('both-1', [simChat, simImage], 5));
    directory.heartbeat(beat('both-1', [simImage], 5));

    expect(directory.lookup('sim-chat').state).toBe('unavailable');
    expect(directory.lookup('sim-image').state).toBe('live');
  });

  // Known defect (see report): a heartbeat may list one model twice (WorkerHeartbeatDto does not require
  // unique ids, and selectServedModels passes WORKER_MODELS duplicates through), and the directory then
  // reports that one worker as two live workers.
  it('counts a worker that lists one model twice as one live worker', () => {
    directory.heartbeat(beat('chat-1', [simChat, simChat], 4));

    expect(directory.list().find((e) => e.id === 'sim-chat')?.liveWorkers).toBe(1);
  });

  it('refuses a heartbeat that lists one model twice at validation', () => {
    expect(() =>
      validateDto(WorkerHeartbeatDto, {
        instanceId: 'chat-1',
        models: [simChat, simChat],
        concurrency: 1,
        hostname: 'h',
        startedAt: 0,
      }),
    ).toThrow('models must not list a model twice');
  });

  it('answers a lookup by alias with the model it names', () => {
    const models = [
      {
        id: 'sim-chat',
        type: 'chat',
        owned_by: 'o',
        backend: { kind: 'simulator' },
        aliases: ['claude-sonnet-4-5'],
      },
    ];
    directory = new WorkerDirectory(
      parseCatalog(JSON.stringify({ models }), 'aliases.json'),
      TTL_MS,
      () => clock,
    );
    expect(directory.lookup('claude-sonnet-4-5')).toMatchObject({
      state: 'unavailable',
      model: { id: 'sim-chat', aliases: ['claude-sonnet-4-5'] },
    });
    directory.heartbeat(beat('w1', [simChat]));
    expect(directory.lookup('claude-sonnet-4-5')).toMatchObject({ state: 'live', model: { id: 'sim-chat' } });
    expect(directory.lookup('claude-opus')).toEqual({ state: 'unknown' });
  });

  describe('lookup', () => {
    it("answers 'live' with the entry for a declared model that has a worker", () => {
      directory.heartbeat(beat('chat-1', [simChat], 8));

      expect(directory.lookup('sim-chat')).toEqual({
        state: 'live',
        model: {
          id: 'sim-chat',
          type: 'chat/compilations',
          owned_by: 'model-gateway',
          created: 1_650_000_000,
          supportedParameters: SIM_CHAT_PARAMETERS,
          liveWorkers: 1,
          readyWorkers: 1,
          concurrency: 8,
        },
      });
    });

    it("answers 'unavailable' with the entry for a declared model without workers", () => {
      directory.heartbeat(beat('chat-1', [simChat], 8));

      expect(directory.lookup('sim-image')).toEqual({
        state: 'unavailable',
        model: {
          id: 'sim-image',
          type: 'images/generations',
          owned_by: 'acme',
          created: 1_600_000_000,
          liveWorkers: 0,
          readyWorkers: 0,
          concurrency: 0,
        },
      });
    });

    it("answers 'unknown' for an id that is neither declared nor served", () => {
      directory.heartbeat(beat('chat-1', [simChat], 8));

      expect(directory.lookup('gpt-4')).toEqual({ state: 'unknown' });
      expect(directory.lookup('')).toEqual({ state: 'unknown' });
      expect(directory.lookup('SIM-CHAT')).toEqual({ state: 'unknown' });
    });

    it("answers 'unavailable' once the only worker of a model is pruned", () => {
      directory.heartbeat(beat('chat-1', [simChat], 8));
      advance(TTL_MS + 1);

      expect(directory.lookup('sim-chat').state).toBe('unavailable');
    });
  });

  describe('models served but not declared', () => {
    const extra: ServedModelDto = { id: 'custom-llm', type: 'chat/compilations', owned_by: 'lab-team' };

    it("lists them with the worker's type and owned_by", () => {
      directory.heartbeat(beat('chat-9', [extra], 6));

      expect(directory.list().find((e) => e.id === 'custom-llm')).toEqual({
        id: 'custom-llm',
        type: 'chat/compilations',
        owned_by: 'lab-team',
        created: Math.floor(START_MS / 1000),
        liveWorkers: 1,
        readyWorkers: 1,
        concurrency: 6,
      });
      expect(directory.lookup('custom-llm')).toMatchObject({ state: 'live' });
    });

    it('sums their capacity over several workers', () => {
      directory.heartbeat(beat('chat-9', [extra], 6));
      directory.heartbeat(beat('chat-10', [extra], 1));

      expect(directory.list().find((e) => e.id === 'custom-llm')).toMatchObject({
        liveWorkers: 2,
        readyWorkers: 2,
        concurrency: 7,
      });
    });

    it("forgets them (lookup 'unknown') once their worker is gone", () => {
      directory.heartbeat(beat('chat-9', [extra], 6));
      directory.deregister('chat-9');

      expect(directory.list().map((e) => e.id)).toEqual(['sim-chat', 'sim-image']);
      expect(directory.lookup('custom-llm')).toEqual({ state: 'unknown' });
    });
  });

  describe('expiry', () => {
    it('prunes a worker silent for longer than the TTL and returns its id', () => {
      directory.heartbeat(beat('chat-1', [simChat], 8));
      advance(TTL_MS + 1);

      expect(directory.prune()).toEqual(['chat-1']);
      expect(directory.workerCount).toBe(0);
      expect(directory.prune()).toEqual([]);
    });

    it('keeps a worker silent for exactly the TTL', () => {
      directory.heartbeat(beat('chat-1', [simChat], 8));
      advance(TTL_MS);

      expect(directory.prune()).toEqual([]);
      expect(directory.lookup('sim-chat').state).toBe('live');
    });

    it('prunes only the workers whose heartbeats stopped', () => {
      directory.heartbeat(beat('chat-1', [simChat], 8));
      directory.heartbeat(beat('chat-2', [simChat], 3));
      advance(TTL_MS / 2);
      directory.heartbeat(beat('chat-2', [simChat], 3));
      advance(TTL_MS / 2 + 1);

      expect(directory.prune()).toEqual(['chat-1']);
      expect(directory.list().find((e) => e.id === 'sim-chat')).toMatchObject({
        liveWorkers: 1,
        readyWorkers: 1,
        concurrency: 3,
      });
    });

    it('leaves expired workers out of list() even without an explicit prune()', () => {
      directory.heartbeat(beat('chat-1', [simChat], 8));
      advance(TTL_MS + 1);

      expect(directory.list().find((e) => e.id === 'sim-chat')).toMatchObject({
        liveWorkers: 0,
        readyWorkers: 0,
        concurrency: 0,
      });
      expect(directory.workerCount).toBe(0);
    });

    it('keeps a worker alive as long as it heartbeats within the TTL', () => {
      directory.heartbeat(beat('chat-1', [simChat], 8));
      for (let i = 0; i < 5; i++) {
        advance(TTL_MS - 1);
        directory.heartbeat(beat('chat-1', [simChat], 8));
      }
      advance(TTL_MS - 1);

      expect(directory.prune()).toEqual([]);
      expect(directory.lookup('sim-chat').state).toBe('live');
    });
  });

  describe('deregister', () => {
    it('removes a worker immediately and reports that it was known', () => {
      directory.heartbeat(beat('chat-1', [simChat], 8));

      expect(directory.deregister('chat-1')).toBe(true);
      expect(directory.workerCount).toBe(0);
      expect(directory.lookup('sim-chat').state).toBe('unavailable');
    });

    it('reports false for a worker it does not know', () => {
      directory.heartbeat(beat('chat-1', [simChat], 8));

      expect(directory.deregister('chat-2')).toBe(false);
      expect(directory.workerCount).toBe(1);
    });
  });

  describe('heartbeat', () => {
    it('says isNew only for the first heartbeat of a worker', () => {
      expect(directory.heartbeat(beat('chat-1', [simChat]))).toEqual({ isNew: true });
      expect(directory.heartbeat(beat('chat-1', [simChat]))).toEqual({ isNew: false });
      expect(directory.heartbeat(beat('chat-2', [simChat]))).toEqual({ isNew: true });
      expect(directory.heartbeat(beat('chat-1', [simChat]))).toEqual({ isNew: false });
    });

    it('says isNew again after the worker deregistered or was pruned', () => {
      directory.heartbeat(beat('chat-1', [simChat]));
      directory.deregister('chat-1');
      expect(directory.heartbeat(beat('chat-1', [simChat]))).toEqual({ isNew: true });

      advance(TTL_MS + 1);
      directory.prune();
      expect(directory.heartbeat(beat('chat-1', [simChat]))).toEqual({ isNew: true });
    });
  });

  it('sorts the list by id', () => {
    directory.heartbeat(beat('w-1', [{ id: 'zeta', type: 'chat/compilations', owned_by: 'x' }]));
    directory.heartbeat(beat('w-2', [{ id: 'alpha', type: 'images/generations', owned_by: 'y' }]));
    directory.heartbeat(beat('w-3', [{ id: 'mid-model', type: 'chat/compilations', owned_by: 'z' }]));

    const ids = directory.list().map((e) => e.id);
    expect(ids).toEqual(['alpha', 'mid-model', 'sim-chat', 'sim-image', 'zeta']);
  });
  it('carries a scaleToZero declaration into the entry, live or not', () => {
    const coldCatalog = parseCatalog(
      JSON.stringify({
        models: [
          {
            id: 'sim-chat',
            type: 'chat',
            owned_by: 'model-gateway',
            backend: { kind: 'simulator' },
            scaleToZero: { maxWaitMs: 45_000 },
          },
        ],
      }),
      'cold-catalog.json',
    );
    const cold = new WorkerDirectory(coldCatalog, TTL_MS, () => clock);
    const idle = cold.lookup('sim-chat');
    expect(idle.state).toBe('unavailable');
    expect(idle.state !== 'unknown' && idle.model.scaleToZero).toEqual({ maxWaitMs: 45_000 });
    cold.heartbeat(beat('chat-1', [simChat]));
    const live = cold.lookup('sim-chat');
    expect(live.state).toBe('live');
    expect(live.state !== 'unknown' && live.model.scaleToZero).toEqual({ maxWaitMs: 45_000 });
    expect(directory.lookup('sim-chat')).not.toHaveProperty('model.scaleToZero');
  });

  it('publishes what each chat model supports from its backend kind; image models and undeclared ones carry none', () => {
    const mixed = new WorkerDirectory(
      parseCatalog(
        JSON.stringify({
          models: [
            { id: 'up', type: 'chat', owned_by: 'o', backend: { kind: 'openai', baseUrl: 'http://x' } },
            { id: 'llama', type: 'chat', owned_by: 'o', backend: { kind: 'llamacpp' } },
            { id: 'img', type: 'image', owned_by: 'o', backend: { kind: 'simulator' } },
          ],
        }),
        'mixed.json',
      ),
      TTL_MS,
      () => clock,
    );
    mixed.heartbeat(beat('w-1', [{ id: 'stray', type: 'chat/compilations', owned_by: 'o' }]));
    const byId = new Map(mixed.list().map((entry) => [entry.id, entry]));
    expect(byId.get('up')?.supportedParameters).toEqual(supportedChatParametersOf('openai'));
    expect(byId.get('up')?.supportedParameters).toContain('logit_bias');
    expect(byId.get('llama')?.supportedParameters).toContain('tools');
    expect(byId.get('llama')?.supportedParameters).toContain('logprobs');
    expect(byId.get('img')).not.toHaveProperty('supportedParameters');
    expect(byId.get('stray')).not.toHaveProperty('supportedParameters');
  });

  it("carries the catalog's urlInputs into the model entry, and nothing when it sets none", () => {
    const guarded = new WorkerDirectory(
      parseCatalog(
        JSON.stringify({
          models: [
            {
              id: 'sim-chat',
              type: 'chat',
              owned_by: 'model-gateway',
              urlInputs: 'none',
              backend: { kind: 'simulator' },
            },
          ],
        }),
        'guarded-catalog.json',
      ),
      TTL_MS,
      () => clock,
    );
    const lookup = guarded.lookup('sim-chat');
    expect(lookup.state !== 'unknown' && lookup.model.urlInputs).toBe('none');
    expect(directory.lookup('sim-chat')).not.toHaveProperty('model.urlInputs');
  });

  it("carries the catalog's contextTokens into the model entry, and nothing when it sets none", () => {
    const sized = new WorkerDirectory(
      parseCatalog(
        JSON.stringify({
          models: [
            {
              id: 'sim-chat',
              type: 'chat',
              owned_by: 'model-gateway',
              contextTokens: 4096,
              backend: { kind: 'simulator' },
            },
          ],
        }),
        'sized-catalog.json',
      ),
      TTL_MS,
      () => clock,
    );
    const lookup = sized.lookup('sim-chat');
    expect(lookup.state !== 'unknown' && lookup.model.contextTokens).toBe(4096);
    expect(directory.lookup('sim-chat')).not.toHaveProperty('model.contextTokens');
  });

  describe('readiness', () => {
    it('counts a worker that said ready: false as live but not ready, and such a model as unavailable', () => {
      directory.heartbeat(beat('chat-1', [{ ...simChat, ready: false }], 8));
      expect(directory.list().find((e) => e.id === 'sim-chat')).toMatchObject({
        liveWorkers: 1,
        readyWorkers: 0,
        concurrency: 8,
      });
      expect(directory.lookup('sim-chat')).toMatchObject({ state: 'unavailable' });

      directory.heartbeat(beat('chat-2', [simChat], 4));
      expect(directory.lookup('sim-chat')).toMatchObject({
        state: 'live',
        model: { liveWorkers: 2, readyWorkers: 1 },
      });

      directory.heartbeat(beat('chat-2', [{ ...simChat, ready: true }], 4));
      directory.heartbeat(beat('chat-1', [simChat], 8));
      expect(directory.lookup('sim-chat')).toMatchObject({ model: { readyWorkers: 2 } });
    });

    it('validates ready as an optional boolean', () => {
      expect(
        validateDto(WorkerHeartbeatDto, beat('chat-1', [{ ...simChat, ready: false }])).models[0]!.ready,
      ).toBe(false);
      expect(() =>
        validateDto(WorkerHeartbeatDto, beat('chat-1', [{ ...simChat, ready: 'no' as unknown as boolean }])),
      ).toThrow();
    });
  });
});
