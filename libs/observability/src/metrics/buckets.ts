/** Request-scale latencies: from a sub-millisecond overhead to a ten-minute generation. */
export const LATENCY_BUCKETS_SECONDS = [
  0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600,
];

/** Gaps between tokens: tens of microseconds (a fast simulator) to seconds (a stalled backend). */
export const INTER_TOKEN_BUCKETS_SECONDS = [
  0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5,
];
