import { GatewayError, type ModelEntry, type ModelLookup } from '@mgw/contracts';
import { ModelDirectory, type ModelDirectoryOptions } from './model.directory';
import type { RegistryClient } from './registry.client';
import { deferred, settle, type Deferred } from '../../../test/support/deferred';

const TIMEOUT_MS = 250;
const FRESH_MS = 1_000;
const STALE_MS = 30_000;

interface FakeClient {
  getModel: jest.Mock<Promise<ModelLookup>, [string, number]>;
  listModels: jest.Mock<Promise<ModelEntry[]>, [number]>;
}

function entry(id: string, liveWorkers: number): ModelEntry {
  return {
    id,
    type: 'chat/compilations',
    owned_by: 'model-gateway',
    created: 1_700_000_000,
    liveWorkers,
    readyWorkers: liveWorkers,
    concurrency: liveWorkers * 4,
  };
}

const live = (id: string, workers = 1): ModelLookup => ({ state: 'live', model: entry(id, workers) });

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected the call to reject');
}

function expectServiceUnavailable(error: unknown): void {
  expect(error).toBeInstanceOf(GatewayError);
  const gatewayError = error as GatewayError;
  expect(gatewayError.status).toBe(503);
  expect(gatewayError.code).toBe('service_unavailable');
  expect(gatewayError.type).toBe('server_error');
}

interface Context {
  client: FakeClient;
  directory: () => ModelDirectory;
}

/** One cached call of the directory, driven through the fake client. */
interface Subject<T> {
  call(): Promise<T>;
  calls(): number;
  lastArgs(): unknown[] | undefined;
  expectedArgs: unknown[];
  answer(value: T): void;
  fail(): void;
  hang(): Deferred<T>;
  first: T;
  second: T;
  /** Whether an expired (but not yet stale) `first` is served at once while the refresh runs. */
  servedWhileRefreshing: boolean;
}

describe('ModelDirectory', () => {
  let clock: number;
  let client: FakeClient;
  let options: ModelDirectoryOptions;
  let directory: ModelDirectory;

  const advance = (ms: number) => {
    clock += ms;
  };
  const build = () => new ModelDirectory(client as unknown as RegistryClient, options, () => clock);

  beforeEach(() => {
    clock = 1_000_000;
    client = {
      getModel: jest.fn<Promise<ModelLookup>, [string, number]>(),
      listModels: jest.fn<Promise<ModelEntry[]>, [number]>(),
    };
    options = { timeoutMs: TIMEOUT_MS, freshMs: FRESH_MS, staleMs: STALE_MS };
    directory = build();
  });

  const context: Context = {
    get client() {
      return client;
    },
    directory: () => directory,
  };

  const lookupSubject =
    (first: ModelLookup, second: ModelLookup, servedWhileRefreshing: boolean) =>
    (ctx: Context): Subject<ModelLookup> => ({
      call: () => ctx.directory().lookup('sim-chat'),
      calls: () => ctx.client.getModel.mock.calls.length,
      lastArgs: () => ctx.client.getModel.mock.lastCall,
      expectedArgs: ['sim-chat', TIMEOUT_MS],
      answer: (value) => void ctx.client.getModel.mockResolvedValueOnce(value),
      fail: () => void ctx.client.getModel.mockRejectedValueOnce(new Error('registry timed out')),
      hang: () => {
        const d = deferred<ModelLookup>();
        ctx.client.getModel.mockReturnValueOnce(d.promise);
        return d;
      },
      first,
      second,
      servedWhileRefreshing,
    });

  const listSubject = (ctx: Context): Subject<ModelEntry[]> => ({
    call: () => ctx.directory().listModels(),
    calls: () => ctx.client.listModels.mock.calls.length,
    lastArgs: () => ctx.client.listModels.mock.lastCall,
    expectedArgs: [TIMEOUT_MS],
    answer: (value) => void ctx.client.listModels.mockResolvedValueOnce(value),
    fail: () => void ctx.client.listModels.mockRejectedValueOnce(new Error('registry timed out')),
    hang: () => {
      const d = deferred<ModelEntry[]>();
      ctx.client.listModels.mockReturnValueOnce(d.promise);
      return d;
    },
    first: [entry('sim-chat', 1)],
    second: [entry('sim-chat', 2), entry('sim-image', 0)],
    servedWhileRefreshing: false,
  });

  const unavailable: ModelLookup = { state: 'unavailable', model: entry('sim-chat', 0) };

  function describeCaching<T>(name: string, makeSubject: (ctx: Context) => Subject<T>): void {
    describe(name, () => {
      let subject: Subject<T>;

      beforeEach(() => {
        subject = makeSubject(context);
      });

      /** Starts a call and reports whether it settled before the registry answered. */
      async function callWhileRegistryHangs(): Promise<{ pending: Promise<unknown>; settledEarly: boolean }> {
        let settled = false;
        const pending = subject.call().finally(() => {
          settled = true;
        });
        await settle();
        return { pending, settledEarly: settled };
      }

      it('asks the registry on the first call, with the configured timeout', async () => {
        subject.answer(subject.first);

        await expect(subject.call()).resolves.toEqual(subject.first);
        expect(subject.calls()).toBe(1);
        expect(subject.lastArgs()).toEqual(subject.expectedArgs);
      });

      it('asks the registry once for concurrent cold calls, and all of them get its answer', async () => {
        const cold = subject.hang();
        const calls = [subject.call(), subject.call(), subject.call()];
        await settle();
        expect(subject.calls()).toBe(1);

        cold.resolve(subject.first);
        await expect(Promise.all(calls)).resolves.toEqual([subject.first, subject.first, subject.first]);
        await expect(subject.call()).resolves.toEqual(subject.first);
        expect(subject.calls()).toBe(1);
      });

      it('shares a failed cold call with everyone waiting, and asks again afterwards', async () => {
        const cold = subject.hang();
        const calls = [subject.call(), subject.call()];
        await settle();
        cold.reject(new Error('registry timed out'));
        for (const call of calls) expectServiceUnavailable(await rejection(call));
        expect(subject.calls()).toBe(1);

        subject.answer(subject.first);
        await expect(subject.call()).resolves.toEqual(subject.first);
        expect(subject.calls()).toBe(2);
      });

      it('serves a fresh answer from memory without asking again', async () => {
        subject.answer(subject.first);
        await subject.call();
        advance(FRESH_MS - 1);

        await expect(subject.call()).resolves.toEqual(subject.first);
        await expect(subject.call()).resolves.toEqual(subject.first);
        expect(subject.calls()).toBe(1);
      });

      it('asks the registry exactly once for concurrent calls after freshMs', async () => {
        subject.answer(subject.first);
        await subject.call();
        advance(FRESH_MS);
        const refresh = subject.hang();

        const { pending, settledEarly } = await callWhileRegistryHangs();
        const others = [subject.call(), subject.call(), subject.call()];
        await settle();
        expect(settledEarly).toBe(subject.servedWhileRefreshing);
        expect(subject.calls()).toBe(2);

        refresh.resolve(subject.second);
        const expected = subject.servedWhileRefreshing ? subject.first : subject.second;
        await expect(Promise.all([pending, ...others])).resolves.toEqual([
          expected,
          expected,
          expected,
          expected,
        ]);
        await settle();

        // The refreshed answer is now fresh.
        await expect(subject.call()).resolves.toEqual(subject.second);
        expect(subject.calls()).toBe(2);
      });

      it('counts freshness from when the refreshed answer arrived', async () => {
        subject.answer(subject.first);
        await subject.call();
        advance(FRESH_MS + 10);
        const refresh = subject.hang();
        const pending = subject.call();
        advance(500);
        refresh.resolve(subject.second);
        await pending;
        await settle();

        advance(FRESH_MS - 1);
        await expect(subject.call()).resolves.toEqual(subject.second);
        expect(subject.calls()).toBe(2);

        advance(1);
        subject.answer(subject.first);
        await subject.call();
        expect(subject.calls()).toBe(3);
      });

      it('serves the stale answer while the registry fails, and retries on the next call', async () => {
        subject.answer(subject.first);
        await subject.call();
        advance(FRESH_MS);

        subject.fail();
        await expect(subject.call()).resolves.toEqual(subject.first);
        await settle();
        expect(subject.calls()).toBe(2);

        advance(STALE_MS - FRESH_MS - 1);
        subject.fail();
        await expect(subject.call()).resolves.toEqual(subject.first);
        await settle();
        expect(subject.calls()).toBe(3);
      });

      it('refuses with 503 service_unavailable once a failed registry leaves the answer older than staleMs', async () => {
        subject.answer(subject.first);
        await subject.call();
        advance(FRESH_MS);
        subject.fail();
        await subject.call();
        await settle();

        advance(STALE_MS - FRESH_MS);
        subject.fail();
        expectServiceUnavailable(await rejection(subject.call()));
        expect(subject.calls()).toBe(3);
      });

      it('refuses with 503 service_unavailable when nothing is cached and the registry fails', async () => {
        subject.fail();

        expectServiceUnavailable(await rejection(subject.call()));
        expect(subject.calls()).toBe(1);
      });

      it('does not cache a failure: the next cold call asks again', async () => {
        subject.fail();
        await rejection(subject.call());

        subject.answer(subject.first);
        await expect(subject.call()).resolves.toEqual(subject.first);
        expect(subject.calls()).toBe(2);
      });

      it('waits for the registry instead of serving an answer older than staleMs', async () => {
        subject.answer(subject.first);
        await subject.call();
        advance(STALE_MS);
        const refresh = subject.hang();

        const { pending, settledEarly } = await callWhileRegistryHangs();
        expect(settledEarly).toBe(false);

        refresh.resolve(subject.second);
        await expect(pending).resolves.toEqual(subject.second);
        expect(subject.calls()).toBe(2);
      });

      it('lets a call past staleMs join a refresh already under way', async () => {
        subject.answer(subject.first);
        await subject.call();
        advance(FRESH_MS);
        const refresh = subject.hang();
        const earlier = subject.call();
        await settle();

        advance(STALE_MS);
        const later = subject.call();
        refresh.resolve(subject.second);

        await expect(later).resolves.toEqual(subject.second);
        await earlier;
        expect(subject.calls()).toBe(2);
      });
    });
  }

  describeCaching("lookup of a 'live' model", lookupSubject(live('sim-chat', 1), live('sim-chat', 2), true));
  describeCaching("lookup of an 'unavailable' model", lookupSubject(unavailable, live('sim-chat', 1), false));
  describeCaching(
    "lookup of an 'unknown' model",
    lookupSubject({ state: 'unknown' }, live('sim-chat', 1), false),
  );
  describeCaching('listModels', listSubject);

  describe('lookup', () => {
    it('caches each id separately', async () => {
      client.getModel.mockImplementation((id) => Promise.resolve(live(id)));

      await expect(directory.lookup('a')).resolves.toEqual(live('a'));
      await expect(directory.lookup('b')).resolves.toEqual(live('b'));
      await expect(directory.lookup('a')).resolves.toEqual(live('a'));

      expect(client.getModel.mock.calls.map(([id]) => id)).toEqual(['a', 'b']);
    });

    it("caches 'unknown' answers too", async () => {
      client.getModel.mockResolvedValue({ state: 'unknown' });

      await expect(directory.lookup('nope')).resolves.toEqual({ state: 'unknown' });
      await expect(directory.lookup('nope')).resolves.toEqual({ state: 'unknown' });
      expect(client.getModel).toHaveBeenCalledTimes(1);
    });

    it('bounds the cache with maxEntries, evicting the oldest id first', async () => {
      options = { ...options, maxEntries: 2 };
      directory = build();
      client.getModel.mockImplementation((id) => Promise.resolve(live(id)));

      await directory.lookup('a');
      await directory.lookup('b');
      await directory.lookup('c');
      expect(client.getModel).toHaveBeenCalledTimes(3);

      await directory.lookup('b');
      await directory.lookup('c');
      expect(client.getModel).toHaveBeenCalledTimes(3);

      await expect(directory.lookup('a')).resolves.toEqual(live('a'));
      expect(client.getModel).toHaveBeenCalledTimes(4);
      expect(client.getModel).toHaveBeenLastCalledWith('a', TIMEOUT_MS);

      // Re-adding 'a' evicted 'b', the oldest remaining.
      await directory.lookup('b');
      expect(client.getModel).toHaveBeenCalledTimes(5);
      expect(client.getModel).toHaveBeenLastCalledWith('b', TIMEOUT_MS);
    });

    it('does not share the per-model cache with listModels', async () => {
      client.getModel.mockResolvedValue(live('sim-chat'));
      client.listModels.mockResolvedValue([entry('sim-chat', 1)]);

      await directory.lookup('sim-chat');
      await directory.listModels();
      await directory.listModels();
      await directory.lookup('sim-chat');

      expect(client.getModel).toHaveBeenCalledTimes(1);
      expect(client.listModels).toHaveBeenCalledTimes(1);
    });
  });

  describe('isReachable', () => {
    it('is true when the registry answers', async () => {
      client.listModels.mockResolvedValue([]);

      await expect(directory.isReachable()).resolves.toBe(true);
      expect(client.listModels).toHaveBeenCalledWith(TIMEOUT_MS);
    });

    it('is false when the registry fails', async () => {
      client.listModels.mockRejectedValue(new Error('connection refused'));

      await expect(directory.isReachable()).resolves.toBe(false);
    });

    it('asks the registry each time rather than trusting the cache', async () => {
      client.listModels.mockResolvedValueOnce([entry('sim-chat', 1)]);
      await directory.listModels();

      client.listModels.mockRejectedValueOnce(new Error('connection refused'));
      await expect(directory.isReachable()).resolves.toBe(false);
      expect(client.listModels).toHaveBeenCalledTimes(2);
    });
  });

  it('reports a model whose live workers are all not ready as one without live workers', async () => {
    const notReady: ModelEntry = { ...entry('pooled', 2), readyWorkers: 0 };
    client.getModel.mockResolvedValueOnce({ state: 'live', model: notReady });
    await expect(directory.lookup('pooled')).resolves.toEqual({ state: 'unavailable', model: notReady });
    client.getModel.mockResolvedValueOnce(live('ready', 2));
    await expect(directory.lookup('ready')).resolves.toEqual(live('ready', 2));
  });
});
