const DAY_MS = 24 * 3600 * 1000;
export const DAY_PATTERN = /^\d{4}-\d{2}-\d{2}$/;

/** Usage days are UTC calendar days, `YYYY-MM-DD`. */
export function dayOf(epochMs: number): string {
  return new Date(epochMs).toISOString().slice(0, 10);
}

/** Parses `YYYY-MM-DD` strictly (no rollover of 2024-02-31); null when it is not a real day. */
export function parseDay(day: string): number | null {
  if (!DAY_PATTERN.test(day)) return null;
  const ms = Date.parse(`${day}T00:00:00Z`);
  return Number.isNaN(ms) || dayOf(ms) !== day ? null : ms;
}

/** Every day from `from` to `to`, inclusive. */
export function daysBetween(fromMs: number, toMs: number): string[] {
  const days: string[] = [];
  for (let ms = fromMs; ms <= toMs; ms += DAY_MS) days.push(dayOf(ms));
  return days;
}

export { DAY_MS };
