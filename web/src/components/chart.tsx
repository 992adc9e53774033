// Bar and line charts of a result, drawn as plain SVG: one category (X) column and one or more
// numeric (Y) columns chosen from the result, each a series (grouped bars, or one line each). Exact numeric strings (int8, numeric) count as
// numbers here; they are only drawn, never summed.
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { cellText } from '../format.ts';
import type { Column } from './result-table.tsx';

// The drawing is as wide as its box (at most 800): a fixed 800-wide viewBox shrunk onto a
// phone drew 11-px labels about 5 px high. The height stays, so a narrow chart is taller.
const MAX_W = 800;
const MIN_W = 280;
const H = 360;
const M = { top: 16, right: 20, bottom: 72, left: 68 };
// Series colours in the page's palette; a sixth series reuses the first.
const SERIES = 5;
const MAX_BARS = 200;
const MAX_POINTS = 5000;

function toNumber(v: unknown): number | null {
  if (typeof v === 'number') return Number.isFinite(v) ? v : null;
  if (typeof v === 'string' && v.trim() !== '' && /^[-+]?(\d+\.?\d*|\.\d+)(e[-+]?\d+)?$/i.test(v.trim())) return Number(v);
  return null;
}

export function numericColumns(columns: Column[], rows: unknown[][]): number[] {
  const out: number[] = [];
  columns.forEach((_, i) => {
    let seen = 0;
    for (const r of rows.slice(0, 500)) {
      const v = r[i];
      if (v === null || v === undefined) continue;
      if (toNumber(v) === null) return;
      seen++;
    }
    if (seen > 0) out.push(i);
  });
  return out;
}

/** Counts and other whole numbers get whole ticks: no 0.5 orders. */
export function niceStep(span: number, count: number, integers = false): number {
  const raw = span / count;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const norm = raw / mag;
  const step = (norm < 1.5 ? 1 : norm < 3 ? 2 : norm < 7 ? 5 : 10) * mag;
  return integers ? Math.max(1, Math.round(step)) : step;
}

const compact = new Intl.NumberFormat(undefined, { notation: 'compact', maximumFractionDigits: 2 });

function truncate(text: string, n: number): string {
  return text.length > n ? `${text.slice(0, n - 1)}…` : text;
}

export function Chart({ columns, rows }: { columns: Column[]; rows: unknown[][] }) {
  const numeric = useMemo(() => numericColumns(columns, rows), [columns, rows]);
  const defaultY = numeric.find((i) => i !== 0) ?? numeric[0] ?? -1;
  const defaultX = columns.findIndex((_, i) => !numeric.includes(i));
  const [kind, setKind] = useState<'bar' | 'line'>('bar');
  const [x, setX] = useState(defaultX >= 0 ? defaultX : 0);
  const [ys, setYs] = useState<number[]>([defaultY]);
  const box = useRef<HTMLDivElement>(null);
  const [W, setW] = useState(MAX_W);
  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const fit = () => setW(Math.max(MIN_W, Math.min(MAX_W, Math.floor(el.clientWidth))));
    fit();
    const ro = new ResizeObserver(fit);
    ro.observe(el);
    return () => ro.disconnect();
  }, [numeric.length]);

  if (numeric.length === 0) {
    return <p class="empty">This result has no numeric column to chart.</p>;
  }
  const picked = ys.filter((i) => numeric.includes(i));
  const yCols = picked.length ? picked : [defaultY];
  const toggleY = (i: number, on: boolean) =>
    setYs(on ? numeric.filter((n) => n === i || yCols.includes(n)) : yCols.filter((n) => n !== i));
  const limit = kind === 'bar' ? MAX_BARS : MAX_POINTS;
  const shown = rows.slice(0, limit);
  const labels = shown.map((r) => cellText(r[x]));
  const series = yCols.map((col) => shown.map((r) => toNumber(r[col])));
  const values = series.flat().filter((v): v is number => v !== null);
  let lo = Math.min(0, ...values);
  let hi = Math.max(0, ...values);
  if (lo === hi) hi = lo + 1;
  const step = niceStep(
    hi - lo,
    W < 500 ? 4 : 5,
    values.every((v) => Number.isInteger(v)),
  );
  lo = Math.floor(lo / step) * step;
  hi = Math.ceil(hi / step) * step;
  const ticks: number[] = [];
  for (let t = lo; t <= hi + step / 2; t += step) ticks.push(Number(t.toPrecision(12)));

  const plotW = W - M.left - M.right;
  const plotH = H - M.top - M.bottom;
  const sy = (v: number) => M.top + plotH - ((v - lo) / (hi - lo)) * plotH;
  const band = plotW / Math.max(1, labels.length);
  const cx = (i: number) => M.left + band * i + band / 2;
  const barW = Math.max(1, (band * 0.76) / yCols.length);
  const labelEvery = Math.max(1, Math.ceil(labels.length / Math.max(4, Math.floor(plotW / 32))));
  const yNames = yCols.map((i) => columns[i].name);
  const title = `${kind === 'bar' ? 'Bar' : 'Line'} chart of ${yNames.join(', ')} by ${columns[x].name}`;
  const linePath = (values: (number | null)[]) =>
    values
      .map((v, i) => (v === null ? null : `${cx(i).toFixed(1)},${sy(v).toFixed(1)}`))
      .filter(Boolean)
      .join(' ');

  return (
    <div class="chart" ref={box}>
      <div class="chart-controls">
        <label class="field inline">
          <span>Chart type</span>
          <select value={kind} onChange={(e) => setKind(e.currentTarget.value as 'bar' | 'line')}>
            <option value="bar">Bar</option>
            <option value="line">Line</option>
          </select>
        </label>
        <label class="field inline">
          <span>X axis</span>
          <select value={String(x)} onChange={(e) => setX(Number(e.currentTarget.value))}>
            {columns.map((c, i) => (
              <option key={i} value={String(i)}>
                {c.name}
              </option>
            ))}
          </select>
        </label>
        <fieldset class="field inline y-series">
          <legend>Y axis</legend>
          {numeric.map((i) => (
            <label key={i} class={`series-pick series-${yCols.indexOf(i) % SERIES}`}>
              <input
                type="checkbox"
                checked={yCols.includes(i)}
                disabled={yCols.length === 1 && yCols[0] === i}
                onChange={(e) => toggleY(i, e.currentTarget.checked)}
              />
              {columns[i].name}
            </label>
          ))}
        </fieldset>
        {rows.length > limit && (
          <span class="muted">
            First {limit.toLocaleString()} of {rows.length.toLocaleString()} rows
          </span>
        )}
      </div>
      <svg class="chart-svg" viewBox={`0 0 ${W} ${H}`} role="img" aria-label={title} data-kind={kind}>
        <title>{title}</title>
        {ticks.map((t) => (
          <g key={t} class="tick">
            <line x1={M.left} x2={W - M.right} y1={sy(t)} y2={sy(t)} class={t === 0 ? 'axis' : 'gridline'} />
            <text x={M.left - 8} y={sy(t)} dy="0.32em" text-anchor="end">
              {compact.format(t)}
            </text>
          </g>
        ))}
        {series.map((vals, s) => (
          <g key={yCols[s]} class={`series series-${s % SERIES}`}>
            {kind === 'bar'
              ? vals.map((v, i) =>
                  v === null ? null : (
                    <rect
                      key={i}
                      class="bar"
                      x={cx(i) - band * 0.38 + barW * s}
                      width={barW}
                      y={Math.min(sy(v), sy(0))}
                      height={Math.max(0.5, Math.abs(sy(v) - sy(0)))}
                    >
                      <title>{`${labels[i]} · ${yNames[s]}: ${v.toLocaleString()}`}</title>
                    </rect>
                  ),
                )
              : [
                  <polyline key="line" class="line" points={linePath(vals)} fill="none" />,
                  ...(vals.length <= 300
                    ? vals.map((v, i) =>
                        v === null ? null : (
                          <circle key={i} class="dot" cx={cx(i)} cy={sy(v)} r={3}>
                            <title>{`${labels[i]} · ${yNames[s]}: ${v.toLocaleString()}`}</title>
                          </circle>
                        ),
                      )
                    : []),
                ]}
          </g>
        ))}
        {labels.map((label, i) =>
          i % labelEvery === 0 ? (
            <text key={`l${i}`} class="xlabel" transform={`translate(${cx(i)},${H - M.bottom + 14}) rotate(-35)`} text-anchor="end">
              {truncate(label, 16)}
            </text>
          ) : null,
        )}
        <text class="axis-title" x={M.left + plotW / 2} y={H - 6} text-anchor="middle">
          {columns[x].name}
        </text>
        <text class="axis-title" transform={`translate(14,${M.top + plotH / 2}) rotate(-90)`} text-anchor="middle">
          {truncate(yNames.join(', '), 40)}
        </text>
      </svg>
    </div>
  );
}
