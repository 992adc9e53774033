// The result grid, virtualised: only the rows in view (plus a margin) are in the DOM, between
// two spacer rows that keep the scrollbar true to the full result. Rows have one fixed height
// (cells do not wrap), which is what makes the arithmetic exact; 10,000 rows cost the same to
// scroll as 50.
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { cellText } from '../format.ts';

export interface Column {
  name: string;
  type: string;
}

const ROW_HEIGHT = 28;
const OVERSCAN = 12;

function columnWidths(columns: Column[], rows: unknown[][]): number[] {
  const sample = rows.slice(0, 200);
  return columns.map((c, i) => {
    // Header names are bold proportional text, wider per character than the monospace cells:
    // measured apart so a short column does not cut its own name ("reven…").
    const header = c.name.length * 8.2 + 28;
    let chars = c.type.length * 0.8;
    for (const r of sample) chars = Math.max(chars, Math.min(cellText(r[i]).length, 60));
    return Math.round(Math.min(420, Math.max(72, header, chars * 7.6 + 24)));
  });
}

export function ResultTable({ columns, rows }: { columns: Column[]; rows: unknown[][] }) {
  const scroller = useRef<HTMLDivElement>(null);
  const [scrollTop, setScrollTop] = useState(0);
  const [height, setHeight] = useState(420);
  const widths = useMemo(() => columnWidths(columns, rows), [columns, rows]);
  const totalWidth = widths.reduce((a, b) => a + b, 56);

  useEffect(() => {
    const el = scroller.current;
    if (!el) return;
    el.scrollTop = 0;
    setScrollTop(0);
    const ro = new ResizeObserver(() => setHeight(el.clientHeight));
    ro.observe(el);
    return () => ro.disconnect();
  }, [rows]);

  let frame = 0;
  const onScroll = () => {
    cancelAnimationFrame(frame);
    frame = requestAnimationFrame(() => setScrollTop(scroller.current?.scrollTop ?? 0));
  };

  const first = Math.max(0, Math.floor(scrollTop / ROW_HEIGHT) - OVERSCAN);
  const last = Math.min(rows.length, Math.ceil((scrollTop + height) / ROW_HEIGHT) + OVERSCAN);
  const visible = rows.slice(first, last);

  return (
    <div class="grid-scroll" ref={scroller} onScroll={onScroll} tabIndex={0} aria-label="Query result">
      <table class="grid" style={{ width: `max(${totalWidth}px, 100%)` }} aria-rowcount={rows.length + 1} aria-colcount={columns.length}>
        <colgroup>
          <col style={{ width: '56px' }} />
          {/* The last column takes the width the table has over its columns' sum (none of it
              for the row numbers); the table is never narrower than that sum. */}
          {widths.map((w, i) => (
            <col key={i} style={i === widths.length - 1 ? undefined : { width: `${w}px` }} />
          ))}
        </colgroup>
        <thead>
          <tr aria-rowindex={1}>
            <th class="rownum" scope="col">
              #
            </th>
            {columns.map((c, i) => (
              <th key={i} scope="col" title={`${c.name} (${c.type})`}>
                <span class="col-name">{c.name}</span>
                <span class="col-type">{c.type}</span>
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {first > 0 && (
            <tr class="spacer" aria-hidden="true" style={{ height: `${first * ROW_HEIGHT}px` }}>
              <td colSpan={columns.length + 1} />
            </tr>
          )}
          {visible.map((row, k) => {
            const index = first + k;
            return (
              <tr key={index} aria-rowindex={index + 2}>
                <td class="rownum">{index + 1}</td>
                {columns.map((_, i) => {
                  const v = row[i];
                  const text = cellText(v);
                  return (
                    <td
                      key={i}
                      class={v === null || v === undefined ? 'null' : typeof v === 'number' ? 'num' : undefined}
                      title={text.length > 40 ? text.slice(0, 2000) : undefined}
                    >
                      {text}
                    </td>
                  );
                })}
              </tr>
            );
          })}
          {last < rows.length && (
            <tr class="spacer" aria-hidden="true" style={{ height: `${(rows.length - last) * ROW_HEIGHT}px` }}>
              <td colSpan={columns.length + 1} />
            </tr>
          )}
        </tbody>
      </table>
    </div>
  );
}
