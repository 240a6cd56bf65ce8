// HdrHistogram in microseconds, summarised in milliseconds.
import hdr from 'hdr-histogram-js';

export function histogram() {
  return hdr.build({
    lowestDiscernibleValue: 1,
    highestTrackableValue: 3_600_000_000,
    numberOfSignificantValueDigits: 3,
  });
}

/** Percentiles of a histogram of microseconds, in milliseconds with microsecond precision. */
export function summary(h) {
  const ms = (us) => Math.round(us) / 1000;
  if (h.totalCount === 0) return { count: 0 };
  return {
    count: h.totalCount,
    p50: ms(h.getValueAtPercentile(50)),
    p90: ms(h.getValueAtPercentile(90)),
    p99: ms(h.getValueAtPercentile(99)),
    max: ms(h.maxValue),
    mean: ms(h.mean),
  };
}
