/** Models slow enough that a test can act while a job is running. */
export const FAULT_CATALOG = {
  models: [
    {
      id: 'sim-late',
      type: 'chat',
      owned_by: 'faults',
      // A long silence before the first token: a worker can die after `started` but before any output.
      backend: { kind: 'simulator', mode: 'echo', ttftMs: 2500, tokensPerSecond: 0 },
    },
    {
      id: 'sim-slow',
      type: 'chat',
      owned_by: 'faults',
      backend: { kind: 'simulator', mode: 'words', maxWords: 400, tokensPerSecond: 10 },
    },
    {
      id: 'sim-fast',
      type: 'chat',
      owned_by: 'faults',
      backend: { kind: 'simulator', mode: 'words', maxWords: 4096, tokensPerSecond: 0 },
    },
    {
      id: 'sim-echo',
      type: 'chat',
      owned_by: 'faults',
      backend: { kind: 'simulator', mode: 'echo', tokensPerSecond: 0 },
    },
    { id: 'sim-image', type: 'image', owned_by: 'faults', backend: { kind: 'simulator' } },
  ],
};

/**
 * A short BullMQ lock so a dead worker's job goes back to the queue in test time. Worker leases
 * (REPLY_HEARTBEAT_MS, WORKER_SILENCE_MS) stay at their defaults: the 5 s bounds are proven as shipped.
 */
export const FAST_REQUEUE = { JOB_LOCK_MS: '2000' };
