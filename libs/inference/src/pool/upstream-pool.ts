import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import {
  keyLayoutOf,
  slotTagged,
  encodeUpstreamEvent,
  GatewayError,
  readUpstreamEvent,
  type ComponentLogger,
  type UpstreamEvent,
} from '@mgw/contracts';
import { REFRESH_SLOTS_SCRIPT, SlotKeeper, type SlotRefresher } from '@mgw/redis';
import type { EngineLoad } from './engine-load.parser';
import { rendezvousOrder } from './rendezvous-order';
import { ACQUIRE_SLOT_SCRIPT, PREFIX_PLACEMENT_SCRIPT, RELEASE_SLOT_SCRIPT } from './slot.scripts';
import { UpstreamCircuit, type CircuitState, type HealthSignal } from './upstream-circuit';

/** One server of a pool, as the pool needs to know it. */
export interface PoolUpstream {
  /** Its label in metrics and logs, and its slot set's name: unique within the model. */
  name: string;
  /** Requests in flight on it at most, across every worker process of the model. */
  maxConcurrency: number;
  /** The active health check; resolves when the upstream answers, rejects otherwise. */
  probe(signal: AbortSignal): Promise<void>;
  /** Reads the engine's own load, when it publishes it; rejects when it cannot. */
  readLoad?(signal: AbortSignal): Promise<EngineLoad>;
}

/** How a pool of several upstreams places a request: by its prompt's prefix, or by load alone. */
export const POOL_ROUTINGS = ['prefix', 'least-loaded'] as const;
export type PoolRouting = (typeof POOL_ROUTINGS)[number];

/** What became of a request's placement by prefix: on its preferred upstream, elsewhere, or it had no key. */
export type PrefixOutcome = 'preferred' | 'spilled' | 'no_key';

export interface PoolSettings {
  /** Upstreams one request may be tried on before the first output (each at most once). */
  maxAttempts: number;
  /** Failures in a row that take an upstream out. */
  failureThreshold: number;
  /** How often an upstream that is out is probed. */
  probeIntervalMs: number;
  /** `prefix`: a request with a prefix key goes where its prefix was last served (several upstreams only). */
  routing: PoolRouting;
  /** Prompts shorter than this (estimated tokens) get no prefix key: load alone places them. */
  prefixMinTokens: number;
  /** How long a request waits for a slot on its preferred upstream before it takes the least loaded. */
  prefixWaitMs: number;
  /** How often an engine's published load is read (by one worker at a time). */
  loadIntervalMs: number;
}

/** What became of one attempt on an upstream. */
export type AttemptOutcome = 'ok' | 'failed' | 'busy' | 'refused' | 'cancelled';
/** How a backend judges an attempt's error: the upstream's fault, the upstream busy (429), or the request's. */
export type AttemptVerdict = 'failed' | 'busy' | 'refused';

export interface AttemptObserver {
  firstOutput(): void;
  ended(outcome: AttemptOutcome): void;
}

/** Per-upstream metrics; implemented by observability's UpstreamMetrics. */
export interface UpstreamObserver {
  state(upstream: string, up: boolean): void;
  attempt(upstream: string): AttemptObserver;
  /** A request placed by prefix routing. */
  routed?(outcome: PrefixOutcome): void;
  /** The engine's latest reading (null: none, or expired). */
  engineLoad?(upstream: string, load: (EngineLoad & { outside: number }) | null): void;
}

/** The shared subscriber connection's dispatcher (redis's PubSubDispatcher). */
export interface PoolChannel {
  listen(channel: string, listener: { message(raw: string): void; connected?(): void }): Promise<void>;
}

/** What a pool needs from its worker process, handed over at start. */
export interface PoolRuntime {
  redis: Redis;
  channel: PoolChannel;
  namespace: string;
  instanceId: string;
  /** How long a slot outlives a worker that stopped extending it. */
  slotTtlMs: number;
  observer?: UpstreamObserver;
  logger: Pick<ComponentLogger, 'warn'>;
}

/** A slot of one upstream, held by this process until released (once; further calls do nothing). */
export class UpstreamSlot {
  private released = false;

  constructor(
    readonly upstream: number,
    readonly id: string,
    /** The slot set, as the SlotKeeper groups slots. */
    readonly keyId: string,
    private readonly onRelease: (lease: UpstreamSlot) => void,
  ) {}

  release(): void {
    if (this.released) return;
    this.released = true;
    this.onRelease(this);
  }
}

/** A request placed by prefix: the slot it holds (traded while it waits, see `tradeFor`) and where it would go. */
interface Placement {
  held: UpstreamSlot;
  /** Its preferred upstream, once the placement found it full (-1 before). */
  preferred: number;
  /** Wakes it while it waits. */
  wakers: Set<() => void>;
}

/** A slot reserved for a job before it was taken; released by the consumer if no job came to use it. */
export interface SlotReservation {
  release(): void;
}

const MIN_WAIT_MS = 50;
/** A waiter re-checks at least this often even without a notification: slots of a dead worker lapse silently. */
const MAX_WAIT_MS = 1000;
const PROBE_TIMEOUT_MS = { min: 500, max: 5000 };
/** How long a prefix is remembered after it was last served: engines evict idle prefixes within minutes. */
const PREFIX_MEMORY_MS = 600_000;
/** A new prefix key goes to an upstream holding at most this many times its capacity's share of the keys. */
const PREFIX_BALANCE_FACTOR = 1.25;
/** A reading of an engine's load is kept for this many intervals: a reader that stops, its reading lapses. */
const LOAD_READING_INTERVALS = 3;
const LOAD_FETCH_TIMEOUT_MS = 2000;

/**
 * The upstreams of one model as one pool: exact cluster-wide concurrency per upstream (slots held in Redis
 * with an expiry), health (a circuit per upstream, shared between worker processes over pub/sub, probed while
 * out), and the attempts of one request across upstreams before its first output.
 *
 * Waiting for a slot is not a poll: a release publishes on the model's channel, which wakes one waiter in
 * every worker process (a waiter that finds more slots free wakes the next); a health change wakes all.
 * A bounded back-off (up to 1 s) covers what sends no message: the lapsed slot of a killed worker.
 */
export class UpstreamPool {
  private runtime: PoolRuntime | null = null;
  private keeper: SlotKeeper | null = null;
  private readonly circuits: UpstreamCircuit[];
  private readonly probes = new Map<number, NodeJS.Timeout>();
  private readonly waiters = new Set<() => void>();
  private readonly readyListeners = new Set<(ready: boolean) => void>();
  /** Slots reserved for jobs about to start here (see `reserve`). */
  private readonly setAside: UpstreamSlot[] = [];
  private readonly slotPrefix = randomBytes(6).toString('hex');
  private slotsTaken = 0;
  /**
   * Counts the wake-ups sent (a slot freed, a health change): a waiter whose acquisition failed while one was
   * sent asks again at once, since the wake-up may have come before it waited (the `free` message arrives on
   * the subscriber connection, the failed acquisition's answer on another one).
   */
  private wakeups = 0;
  /**
   * Requests waiting for a slot on their preferred upstream, by upstream: woken by every slot freed there
   * (not one waiter of the whole pool, which may be a fetcher that takes the slot for another job).
   */
  private readonly placementWaiters = new Map<number, Set<() => void>>();
  /** This process's requests waiting for their preferred upstream, each holding a slot elsewhere. */
  private readonly placing = new Set<Placement>();
  /** Slots freed per upstream, as the notifications counted them (see `wakeups`). */
  private readonly freed: number[];
  private stopped = false;
  private lastReady = true;
  private loadTimer: NodeJS.Timeout | null = null;
  private readingLoads = false;

  constructor(
    readonly model: string,
    readonly upstreams: readonly PoolUpstream[],
    readonly settings: PoolSettings,
  ) {
    this.circuits = upstreams.map(() => new UpstreamCircuit(settings.failureThreshold));
    this.freed = upstreams.map(() => 0);
  }

  /** Some upstream is up: the model can take requests. */
  get ready(): boolean {
    return this.circuits.some((circuit) => circuit.up);
  }

  stateOf(upstream: number): CircuitState {
    return this.circuits[upstream]!.state;
  }

  onReadyChange(listener: (ready: boolean) => void): void {
    this.readyListeners.add(listener);
  }

  async start(runtime: PoolRuntime): Promise<void> {
    this.runtime = runtime;
    this.keeper = new SlotKeeper(this.refresher(runtime), runtime.slotTtlMs, runtime.logger);
    for (const upstream of this.upstreams) runtime.observer?.state(upstream.name, true);
    await runtime.channel.listen(this.channel(runtime), {
      message: (raw) => this.onEvent(raw),
      // Messages sent while the subscription was down are lost: everyone waiting looks again.
      connected: () => this.wakeAll(),
    });
    if (this.upstreams.some((upstream) => upstream.readLoad !== undefined)) {
      this.loadTimer = setInterval(() => void this.readLoads(), this.settings.loadIntervalMs);
      this.loadTimer.unref();
    }
  }

  /** Whether requests are placed by prefix: `prefix` routing over more than one upstream. */
  get routesByPrefix(): boolean {
    return this.settings.routing === 'prefix' && this.upstreams.length > 1;
  }

  stop(): void {
    this.stopped = true;
    this.keeper?.stop();
    if (this.loadTimer !== null) clearInterval(this.loadTimer);
    for (const timer of this.probes.values()) clearTimeout(timer);
    this.probes.clear();
    this.wakeAll();
  }

  /**
   * For the queue consumer (its job gate): a slot on some healthy upstream, waited for, set aside for the next
   * job this process starts (`run` takes it); or none at once when no upstream is up, so the job is taken
   * and answered at once (503, or its fallback). Slots set aside are interchangeable: whichever job starts
   * first takes one, and releasing a reservation whose slot a job took does nothing.
   */
  async reserve(signal: AbortSignal): Promise<SlotReservation> {
    const lease = await this.acquire(signal);
    if (lease === null) return { release: () => undefined };
    this.setAside.push(lease);
    return {
      release: () => {
        const index = this.setAside.indexOf(lease);
        if (index < 0) return;
        this.setAside.splice(index, 1);
        lease.release();
      },
    };
  }

  /**
   * Waits for a free slot on an upstream that is up and not in `exclude`; null when there is none such
   * (all out, or all tried). Rejects with the signal's reason when it aborts.
   */
  async acquire(signal: AbortSignal, exclude: ReadonlySet<number> = new Set()): Promise<UpstreamSlot | null> {
    const runtime = this.started();
    let waitMs = MIN_WAIT_MS;
    for (;;) {
      signal.throwIfAborted();
      const candidates = this.circuits
        .map((circuit, index) => (circuit.up && !exclude.has(index) ? index : -1))
        .filter((index) => index >= 0);
      if (candidates.length === 0 || this.stopped) return null;
      const id = `${this.slotPrefix}${(this.slotsTaken++).toString(36)}`;
      const wakeupsBefore = this.wakeups;
      const [chosen, free] = (await ACQUIRE_SLOT_SCRIPT.run(
        runtime.redis,
        [
          ...candidates.map((index) => this.slotKey(runtime, index)),
          ...candidates.map((index) => this.loadKey(runtime, index)),
        ],
        [0, runtime.slotTtlMs, id, ...candidates.map((index) => this.upstreams[index]!.maxConcurrency)],
      )) as [number, number];
      if (chosen > 0) {
        if (free > 0) this.wakeOne();
        return this.track(runtime, candidates[chosen - 1]!, id);
      }
      if (this.wakeups !== wakeupsBefore) continue;
      await this.wait(signal, waitMs);
      waitMs = Math.min(MAX_WAIT_MS, waitMs * 2);
    }
  }

  /**
   * One request's attempts: on the upstream of a slot set aside for a job first (see `reserve`), then — while nothing was output, the
   * error is the upstream's (or it is busy) and attempts remain — on another healthy upstream, waiting for a
   * slot there no longer than the signal (the job's deadline) allows. Each upstream is tried at most once.
   * After the first output an error ends the request as it is: never a silent switch mid-answer.
   */
  async *run<T>(
    signal: AbortSignal,
    attempt: (upstream: number, signal: AbortSignal) => AsyncIterable<T>,
    judge: (error: unknown) => AttemptVerdict,
    /** The request's prompt prefix key (pool/prompt-prefix.ts); null: none, load alone places it. */
    prefixKey: string | null = null,
  ): AsyncGenerator<T> {
    const runtime = this.started();
    const tried = new Set<number>();
    const attempts = Math.min(this.settings.maxAttempts, this.upstreams.length);
    let lease = this.setAside.shift() ?? null;
    let lastError: unknown = null;
    for (;;) {
      // The reserved upstream may have been taken out while its fetcher waited for a job.
      if (lease !== null && !this.circuits[lease.upstream]!.up) {
        lease.release();
        lease = null;
      }
      lease ??= await this.acquire(signal, tried);
      // Nowhere left to try: the last attempt's error (as the backend threw it), or none was possible.
      if (lease === null) throw (lastError as Error | null) ?? this.unavailable();
      // A retry goes wherever a slot is free: the preferred upstream is the one that just failed.
      if (tried.size === 0 && this.routesByPrefix) lease = await this.placeByPrefix(lease, prefixKey, signal);
      const current: UpstreamSlot = lease;
      lease = null;
      const index = current.upstream;
      tried.add(index);
      const observer = runtime.observer?.attempt(this.upstreams[index]!.name);
      let produced = false;
      let outcome: AttemptOutcome = 'cancelled';
      try {
        for await (const item of attempt(index, signal)) {
          if (!produced) observer?.firstOutput();
          produced = true;
          yield item;
        }
        outcome = 'ok';
        this.report(index, 'answered');
        return;
      } catch (error) {
        if (signal.aborted) throw error;
        const verdict = judge(error);
        outcome = verdict;
        // A failure after the first output is counted, but is no health signal: the upstream started the
        // answer, and what broke it (a long context, a client's odd request) is as likely the request's.
        if (verdict !== 'failed') this.report(index, 'answered');
        else if (!produced) this.report(index, 'failed');
        if (produced || verdict === 'refused' || tried.size >= attempts) throw error;
        lastError = error;
      } finally {
        observer?.ended(outcome);
        current.release();
      }
    }
  }

  /**
   * Moves a request holding `held` (a slot on the least loaded upstream) to the upstream its prefix was last
   * served on — or, for a new prefix, the first in its rendezvous order under its bounded share of the
   * prefixes — when that one has a free slot; waits up to `prefixWaitMs` for one there (woken by releases,
   * as `acquire` is), then stays on the slot it holds, where its prefix is remembered from then on.
   *
   * A waiting request's slot sits idle, so when the preferred upstream is full and a request of this process
   * waits while holding a slot there, the two trade slots (see `tradeFor`): without that, requests holding
   * each other's preferred upstreams all wait out their deadline and then scatter.
   */
  private async placeByPrefix(
    held: UpstreamSlot,
    prefixKey: string | null,
    signal: AbortSignal,
  ): Promise<UpstreamSlot> {
    const runtime = this.started();
    if (prefixKey === null) {
      runtime.observer?.routed?.('no_key');
      return held;
    }
    const placement: Placement = { held, preferred: -1, wakers: new Set() };
    try {
      return await this.place(runtime, placement, prefixKey, signal);
    } catch (error) {
      // Aborted while waiting, or Redis failed: the slot it holds now (perhaps traded) is its own to give back.
      placement.held.release();
      throw error;
    }
  }

  private async place(
    runtime: PoolRuntime,
    placement: Placement,
    prefixKey: string,
    signal: AbortSignal,
  ): Promise<UpstreamSlot> {
    const preference = rendezvousOrder(
      prefixKey,
      this.upstreams.map((upstream) => upstream.name),
    );
    const deadline = performance.now() + this.settings.prefixWaitMs;
    let settle = false;
    for (;;) {
      signal.throwIfAborted();
      // The slot held may have been traded, and circuits may have moved, since the last look.
      const held = placement.held;
      const order = preference.filter((index) => index === held.upstream || this.circuits[index]!.up);
      const keys = [
        ...order.map((index) => this.slotKey(runtime, index)),
        ...order.map((index) => this.prefixKeysKey(runtime, index)),
        ...order.map((index) => this.loadKey(runtime, index)),
      ];
      const limits = order.map((index) => this.upstreams[index]!.maxConcurrency);
      const id = `${this.slotPrefix}${(this.slotsTaken++).toString(36)}`;
      const wakeupsBefore = this.wakeups;
      const freedBefore = this.freed.slice();
      const [chosen, how] = (await PREFIX_PLACEMENT_SCRIPT.run(runtime.redis, keys, [
        0,
        runtime.slotTtlMs,
        id,
        prefixKey,
        PREFIX_MEMORY_MS,
        order.indexOf(held.upstream) + 1,
        settle ? 1 : 0,
        PREFIX_BALANCE_FACTOR,
        ...limits,
      ])) as [number, number];
      if (how === 0 || how === 2) {
        runtime.observer?.routed?.(how === 0 ? 'preferred' : 'spilled');
        return held;
      }
      if (how === 1) {
        const lease = this.track(runtime, order[chosen - 1]!, id);
        held.release();
        runtime.observer?.routed?.('preferred');
        return lease;
      }
      placement.preferred = order[chosen - 1]!;
      const remaining = deadline - performance.now();
      if (remaining <= 0 || this.stopped) settle = true;
      else if (this.tradeFor(placement)) continue;
      else if (
        this.freed[placement.preferred] === freedBefore[placement.preferred] &&
        this.wakeups === wakeupsBefore
      ) {
        let waiters = this.placementWaiters.get(placement.preferred);
        if (waiters === undefined) this.placementWaiters.set(placement.preferred, (waiters = new Set()));
        this.placing.add(placement);
        try {
          await this.wait(signal, Math.min(remaining, MAX_WAIT_MS), waiters, placement.wakers);
        } finally {
          this.placing.delete(placement);
        }
      }
    }
  }

  /**
   * Gives `placement` the slot a waiting request of this process holds on its preferred upstream, in
   * exchange for its own (the other's own preferred first: then both run where their prefixes are). The
   * other is woken to look again from the slot it now holds; no slot changes hands in Redis.
   */
  private tradeFor(placement: Placement): boolean {
    let partner: Placement | null = null;
    for (const other of this.placing) {
      if (other === placement || other.held.upstream !== placement.preferred) continue;
      partner = other;
      if (other.preferred === placement.held.upstream) break;
    }
    if (partner === null) return false;
    this.placing.delete(partner);
    [placement.held, partner.held] = [partner.held, placement.held];
    for (const wake of [...partner.wakers]) wake();
    return true;
  }

  /**
   * One reading of every engine that publishes its load, by whichever worker holds that upstream's lease
   * (a key set with NX for one interval): the engine is read once per interval for the model, not once per
   * worker. The reading goes to Redis, where slot placement counts its outside traffic (requests running or
   * waiting in the engine beyond this pool's slots there), kept for a few intervals; a failed read writes
   * nothing, so the last reading lapses. Every worker then reports the stored readings as metrics.
   */
  private async readLoads(): Promise<void> {
    const runtime = this.runtime;
    if (runtime === null || this.stopped || this.readingLoads) return;
    this.readingLoads = true;
    try {
      const interval = this.settings.loadIntervalMs;
      await Promise.all(
        this.upstreams.map(async (upstream, index) => {
          if (upstream.readLoad === undefined) return;
          const lease = await runtime.redis.set(
            this.loadKey(runtime, index) + ':reader',
            runtime.instanceId,
            'PX',
            interval,
            'NX',
          );
          if (lease !== 'OK') return;
          let load: EngineLoad;
          try {
            load = await upstream.readLoad(AbortSignal.timeout(Math.min(interval, LOAD_FETCH_TIMEOUT_MS)));
          } catch {
            return; // no reading: the last one lapses
          }
          const ours = await runtime.redis.zcard(this.slotKey(runtime, index));
          const outside = Math.max(0, load.running + load.waiting - ours);
          await runtime.redis
            .multi()
            .hset(this.loadKey(runtime, index), {
              outside,
              running: load.running,
              waiting: load.waiting,
              kv: load.kvCacheUsage ?? '',
            })
            .pexpire(this.loadKey(runtime, index), LOAD_READING_INTERVALS * interval)
            .exec();
        }),
      );
      await this.reportLoads(runtime);
    } catch (error) {
      runtime.logger.warn(`model ${this.model}: reading the engines' load failed: ${String(error)}`);
    } finally {
      this.readingLoads = false;
    }
  }

  private async reportLoads(runtime: PoolRuntime): Promise<void> {
    const observer = runtime.observer;
    if (observer?.engineLoad === undefined) return;
    const published = this.upstreams
      .map((upstream, index) => ({ upstream, index }))
      .filter(({ upstream }) => upstream.readLoad !== undefined);
    const readings = await Promise.all(
      published.map(({ index }) => runtime.redis.hgetall(this.loadKey(runtime, index))),
    );
    published.forEach(({ upstream }, i) => {
      const reading = readings[i]!;
      if (reading.outside === undefined) {
        observer.engineLoad!(upstream.name, null);
        return;
      }
      observer.engineLoad!(upstream.name, {
        running: Number(reading.running),
        waiting: Number(reading.waiting),
        kvCacheUsage: reading.kv === undefined || reading.kv === '' ? null : Number(reading.kv),
        outside: Number(reading.outside),
      });
    });
  }

  /** The client-facing error when no upstream of the model is up. */
  unavailable(): GatewayError {
    return new GatewayError(
      503,
      'server_error',
      'upstream_unavailable',
      `Every upstream server of the model \`${this.model}\` is out of service right now. Try again shortly.`,
      null,
      { 'retry-after': '1' },
    );
  }

  private report(upstream: number, signal: HealthSignal): void {
    if (this.circuits[upstream]!.record(signal)) this.changed(upstream, true);
  }

  /** After a circuit changed state: metrics, probes, waiters, peers, readiness. */
  private changed(upstream: number, announce: boolean): void {
    const runtime = this.started();
    const { name } = this.upstreams[upstream]!;
    const state = this.circuits[upstream]!.state;
    runtime.observer?.state(name, state === 'up');
    if (state === 'out') {
      runtime.logger.warn(`model ${this.model}: upstream ${name} is out of service; probing it`);
      this.scheduleProbe(upstream);
    } else {
      clearTimeout(this.probes.get(upstream));
      this.probes.delete(upstream);
      runtime.logger.warn(`model ${this.model}: upstream ${name} is back in service`);
    }
    // Every waiter looks again: back, it has slots to take; out, there may be no upstream left to wait for.
    this.wakeAll();
    if (announce) {
      runtime.redis
        .publish(
          this.channel(runtime),
          encodeUpstreamEvent({ kind: state, upstream: name, sender: runtime.instanceId }),
        )
        .catch(() => undefined); // peers find out by themselves then
    }
    const ready = this.ready;
    if (ready !== this.lastReady) {
      this.lastReady = ready;
      for (const listener of this.readyListeners) listener(ready);
    }
  }

  private scheduleProbe(upstream: number): void {
    if (this.stopped || this.probes.has(upstream)) return;
    const timer = setTimeout(() => {
      this.probes.delete(upstream);
      void this.probe(upstream);
    }, this.settings.probeIntervalMs);
    timer.unref();
    this.probes.set(upstream, timer);
  }

  private async probe(upstream: number): Promise<void> {
    if (this.stopped || this.circuits[upstream]!.up) return;
    const timeoutMs = Math.min(
      PROBE_TIMEOUT_MS.max,
      Math.max(PROBE_TIMEOUT_MS.min, this.settings.probeIntervalMs),
    );
    let answered = false;
    try {
      await this.upstreams[upstream]!.probe(AbortSignal.timeout(timeoutMs));
      answered = true;
    } catch {
      // Still out: the next probe follows.
    }
    if (this.stopped || this.circuits[upstream]!.up) return;
    if (answered && this.circuits[upstream]!.probeAnswered()) this.changed(upstream, true);
    else this.scheduleProbe(upstream);
  }

  private onEvent(raw: string): void {
    if (this.runtime === null) return;
    let event: UpstreamEvent;
    try {
      event = readUpstreamEvent(raw);
    } catch (error) {
      this.runtime.logger.warn(
        `model ${this.model}: ignoring an upstream event: ${(error as Error).message}`,
      );
      return;
    }
    if (event.kind === 'free') {
      // This process woke its own waiters when it released the slot.
      if (event.sender === this.runtime.instanceId) return;
      const freed = this.upstreams.findIndex((u) => u.name === event.upstream);
      this.slotFreed(freed);
      return;
    }
    if (event.sender === this.runtime.instanceId) return;
    const upstream = this.upstreams.findIndex((u) => u.name === event.upstream);
    if (upstream < 0) return;
    if (this.circuits[upstream]!.force(event.kind)) this.changed(upstream, false);
  }

  private release(lease: UpstreamSlot): void {
    const runtime = this.started();
    this.keeper?.untrack(lease);
    const { name } = this.upstreams[lease.upstream]!;
    RELEASE_SLOT_SCRIPT.run(
      runtime.redis,
      [lease.keyId],
      [
        lease.id,
        this.channel(runtime),
        encodeUpstreamEvent({ kind: 'free', upstream: name, sender: runtime.instanceId }),
      ],
    ).catch((error: unknown) =>
      // The slot lapses by itself within slotTtlMs.
      runtime.logger.warn(`model ${this.model}: releasing a slot of ${name} failed: ${String(error)}`),
    );
    // The release is sent ahead of any acquisition a waiter woken now sends on the same connection, so this
    // process's waiters look at once instead of after the notification's round trip through Redis.
    this.slotFreed(lease.upstream);
  }

  /** A slot of `upstream` (-1: one this process does not know) was freed: its waiters and one other look. */
  private slotFreed(upstream: number): void {
    if (upstream >= 0) {
      this.freed[upstream]!++;
      for (const wake of [...(this.placementWaiters.get(upstream) ?? [])]) wake();
    }
    this.wakeOne();
  }

  /** Resolves when woken (through any of `waiters`), after `ms`, or when `signal` aborts (the caller checks it next). */
  private wait(signal: AbortSignal, ms: number, ...waiters: Array<Set<() => void>>): Promise<void> {
    const sets = waiters.length > 0 ? waiters : [this.waiters];
    return new Promise((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        signal.removeEventListener('abort', wake);
        for (const set of sets) set.delete(wake);
        resolve();
      };
      const timer = setTimeout(wake, ms);
      for (const set of sets) set.add(wake);
      signal.addEventListener('abort', wake, { once: true });
    });
  }

  private wakeOne(): void {
    this.wakeups++;
    const first = this.waiters.values().next();
    if (!first.done) first.value();
  }

  private wakeAll(): void {
    this.wakeups++;
    for (const wake of [...this.waiters]) wake();
    for (const waiters of this.placementWaiters.values()) for (const wake of [...waiters]) wake();
  }

  /** A slot just taken on `upstream`, kept alive until released. */
  private track(runtime: PoolRuntime, upstream: number, id: string): UpstreamSlot {
    const lease = new UpstreamSlot(upstream, id, this.slotKey(runtime, upstream), (held) =>
      this.release(held),
    );
    this.keeper!.track(lease);
    return lease;
  }

  private refresher(runtime: PoolRuntime): SlotRefresher {
    return {
      refresh: async (keyId, ids) => {
        if (ids.length === 0) return;
        await REFRESH_SLOTS_SCRIPT.run(runtime.redis, [keyId], [0, runtime.slotTtlMs, ...ids]);
      },
    };
  }

  /** On a Cluster the model is a hash tag: one acquisition looks at all its upstreams' slots in one script. */
  private slotKey(runtime: PoolRuntime, upstream: number): string {
    const model = slotTagged(this.model, keyLayoutOf(runtime.redis));
    return `${runtime.namespace}:upstream-slots:${model}:${this.upstreams[upstream]!.name}`;
  }

  /** The prefix keys last served on an upstream, scored by when (prefix-placement.lua). */
  private prefixKeysKey(runtime: PoolRuntime, upstream: number): string {
    const model = slotTagged(this.model, keyLayoutOf(runtime.redis));
    return `${runtime.namespace}:upstream-prefixes:${model}:${this.upstreams[upstream]!.name}`;
  }

  /** The engine's latest load reading (a hash; `outside` is what placement counts). */
  private loadKey(runtime: PoolRuntime, upstream: number): string {
    const model = slotTagged(this.model, keyLayoutOf(runtime.redis));
    return `${runtime.namespace}:upstream-load:${model}:${this.upstreams[upstream]!.name}`;
  }

  private channel(runtime: PoolRuntime): string {
    return `${runtime.namespace}:upstream-events:${this.model}`;
  }

  private started(): PoolRuntime {
    if (this.runtime === null) throw new Error(`the upstream pool of model ${this.model} is not started`);
    return this.runtime;
  }
}
