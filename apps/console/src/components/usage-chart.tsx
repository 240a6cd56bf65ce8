import { useEffect, useRef, useState } from 'preact/hooks';
import type { SpendRow } from '../lib/admin.types';

export type UsageMetric = 'requests' | 'tokens' | 'images' | 'cost';

const PALETTE = ['#3b82f6', '#f59e0b', '#10b981', '#ef4444', '#8b5cf6', '#06b6d4', '#ec4899', '#84cc16'];

export function valueOf(row: SpendRow, metric: UsageMetric): number {
  if (metric === 'tokens') return row.prompt_tokens + row.completion_tokens;
  if (metric === 'cost') return row.cost ?? 0;
  return row[metric];
}

/** At most this many grid steps above zero. */
const TICKS = 4;

/**
 * A step of 1, 2 or 5 × 10^k such that `TICKS` of them reach `value`: counts get whole ticks, amounts of
 * money (`fractional`) steps as small as the micro-unit.
 */
function tickStep(value: number, fractional: boolean): number {
  const raw = Math.max(fractional ? 1e-6 : 1, value / TICKS);
  const power = 10 ** Math.floor(Math.log10(raw));
  return ([1, 2, 5, 10].find((step) => step * power >= raw) ?? 10) * power;
}

/** The width the chart has on screen, so it is drawn in real pixels (text stays readable on a phone). */
function useWidth(fallback: number): [{ current: HTMLElement | null }, number] {
  const ref = useRef<HTMLElement | null>(null);
  const [width, setWidth] = useState(fallback);
  useEffect(() => {
    const element = ref.current;
    if (!element) return;
    const observer = new ResizeObserver(([entry]) => {
      const next = Math.floor(entry?.contentRect.width ?? 0);
      if (next > 0) setWidth(next);
    });
    observer.observe(element);
    return () => observer.disconnect();
  }, []);
  return [ref, width];
}

interface Props {
  days: string[];
  rows: SpendRow[];
  metric: UsageMetric;
  /** The currency of `cost`, named in the chart's description. */
  currency?: string | null;
}

/**
 * Usage per day, one bar per day stacked by model: a small SVG drawn here (no chart library). Each segment
 * has a <title> for pointer users; the table under the chart carries the same numbers for everyone.
 */
export function UsageChart({ days, rows, metric, currency }: Props) {
  const [ref, width] = useWidth(640);
  const models = [...new Set(rows.map((r) => r.model))].sort();
  const color = (model: string) => PALETTE[models.indexOf(model) % PALETTE.length]!;
  const perDay = days.map((day) => {
    const byModel = new Map<string, number>();
    for (const row of rows) {
      if (row.date === day) byModel.set(row.model, (byModel.get(row.model) ?? 0) + valueOf(row, metric));
    }
    return { day, byModel, total: [...byModel.values()].reduce((a, b) => a + b, 0) };
  });
  const highest = Math.max(0, ...perDay.map((d) => d.total));
  const step = tickStep(highest, metric === 'cost');
  const ticks = Math.max(1, Math.ceil(highest / step));
  const top = step * ticks;
  const height = 220;
  const pad = { left: 48, right: 8, top: 12, bottom: 28 };
  const plotW = width - pad.left - pad.right;
  const plotH = height - pad.top - pad.bottom;
  const slot = plotW / Math.max(1, days.length);
  const barW = Math.max(2, Math.min(48, slot * 0.7));
  const y = (value: number) => pad.top + plotH - (value / top) * plotH;
  // Day labels ("11-23") need about 44 px each.
  const labelEvery = Math.max(1, Math.ceil((days.length * 44) / plotW));
  const grand = perDay.reduce((sum, d) => sum + d.total, 0);
  const unit = metric === 'cost' ? (currency ?? 'cost') : metric;
  return (
    <figure class="chart" ref={ref}>
      <svg
        width={width}
        height={height}
        viewBox={`0 0 ${width} ${height}`}
        role="img"
        aria-label={`${metric} per day from ${days[0] ?? ''} to ${days[days.length - 1] ?? ''}: ${formatCount(grand)} ${unit} in total`}
      >
        {Array.from({ length: ticks + 1 }, (_, i) => i * step).map((tick) => (
          <g key={tick}>
            <line x1={pad.left} x2={width - pad.right} y1={y(tick)} y2={y(tick)} class="grid" />
            <text x={pad.left - 6} y={y(tick) + 4} text-anchor="end" class="axis">
              {formatCount(tick)}
            </text>
          </g>
        ))}
        {perDay.map((d, i) => {
          const x = pad.left + i * slot + (slot - barW) / 2;
          let base = 0;
          return (
            <g key={d.day}>
              {models.map((model) => {
                const value = d.byModel.get(model) ?? 0;
                if (value === 0) return null;
                const rect = (
                  <rect
                    key={model}
                    x={x}
                    width={barW}
                    y={y(base + value)}
                    height={y(base) - y(base + value)}
                    fill={color(model)}
                  >
                    <title>{`${d.day} · ${model}: ${formatCount(value)} ${unit}`}</title>
                  </rect>
                );
                base += value;
                return rect;
              })}
              {i % labelEvery === 0 && (
                <text x={x + barW / 2} y={height - 8} text-anchor="middle" class="axis">
                  {d.day.slice(5)}
                </text>
              )}
            </g>
          );
        })}
      </svg>
      <figcaption>
        <ul class="legend">
          {models.map((model) => (
            <li key={model}>
              <svg width="12" height="12" aria-hidden="true">
                <rect width="12" height="12" rx="2" fill={color(model)} />
              </svg>
              {model}
            </li>
          ))}
          {models.length === 0 && <li>No usage in this range.</li>}
        </ul>
      </figcaption>
    </figure>
  );
}

function formatCount(value: number): string {
  if (value >= 1e6) return `${+(value / 1e6).toFixed(1)}M`;
  if (value >= 1e3) return `${+(value / 1e3).toFixed(1)}k`;
  if (value >= 1 || value === 0) return String(+value.toFixed(1));
  // An amount of money below one unit: its significant digits, to the micro-unit.
  return String(+(+value.toPrecision(2)).toFixed(6));
}
