/** UTC days as the usage API names them (YYYY-MM-DD). */
const DAY_MS = 86_400_000;

export function utcDay(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

/** Every day from `from` to `to`, inclusive; empty when the range is reversed or unreadable. */
export function daysBetween(from: string, to: string, max = 366): string[] {
  const start = Date.parse(`${from}T00:00:00Z`);
  const end = Date.parse(`${to}T00:00:00Z`);
  if (!Number.isFinite(start) || !Number.isFinite(end) || start > end) return [];
  const days: string[] = [];
  for (let t = start; t <= end && days.length < max; t += DAY_MS) days.push(utcDay(t));
  return days;
}

export function daysAgo(n: number, now = Date.now()): string {
  return utcDay(now - n * DAY_MS);
}
