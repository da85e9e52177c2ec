/**
 * Plain-text tables and CSV for people and spreadsheets. Pure functions over already-normalised
 * values, shared by every read command and the demo.
 */

export type Cell = string | number | boolean | null | undefined;

function cellText(value: Cell): string {
  if (value === null || value === undefined) return '-';
  return String(value).replace(/\s+/g, ' ');
}

/** Left-aligned text, right-aligned numbers, two spaces between columns, a header line. */
export function renderTable(headers: string[], rows: Cell[][], maxWidth = 60): string[] {
  const text = rows.map((r) => r.map((c) => clip(cellText(c), maxWidth)));
  // a loop, not Math.max(...cells): a spread passes one argument per row and overflows the stack
  const widths = headers.map((h) => h.length);
  for (const r of text) for (let i = 0; i < widths.length; i++) widths[i] = Math.max(widths[i], (r[i] ?? '').length);
  // numbers, and numbers already formatted (`1,234`, `83.3%`, `120/45`), align right
  const isNumeric = (c: Cell) =>
    c === null ||
    c === undefined ||
    typeof c === 'number' ||
    (typeof c === 'string' && /^(-|-?[\d,.]+(%|\/[\d,.]+)?)$/.test(c));
  const numeric = headers.map((_, i) => rows.length > 0 && rows.every((r) => isNumeric(r[i])));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (numeric[i] ? c.padStart(widths[i]) : c.padEnd(widths[i])))
      .join('  ')
      .trimEnd();
  return [line(headers), ...text.map(line)];
}

export function clip(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, Math.max(0, max - 3))}...` : text;
}

/** RFC 4180 CSV: quotes fields holding a comma, quote or line break; null is an empty field. */
export function toCsv(headers: string[], rows: Cell[][]): string[] {
  const field = (v: Cell) => {
    if (v === null || v === undefined) return '';
    const s = String(v);
    return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
  };
  return [headers.map(field).join(','), ...rows.map((r) => r.map(field).join(','))];
}

/** `1234` as `1,234` (grouping fixed to en-US so output never depends on the machine's locale). */
export function formatInt(n: number): string {
  return n.toLocaleString('en-US');
}

/** `65432` as `1m 5.4s`; null as `-`. */
export function formatDuration(ms: number | null): string {
  if (ms === null) return '-';
  if (ms < 1000) return `${ms}ms`;
  const s = ms / 1000;
  if (s < 60) return `${s.toFixed(1)}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m ${(s - m * 60).toFixed(0)}s`;
  const h = Math.floor(m / 60);
  return `${h}h ${m - h * 60}m`;
}

/** `0.8333` as `83.3%`; null as `-`. */
export function formatPercent(ratio: number | null): string {
  return ratio === null ? '-' : `${(ratio * 100).toFixed(1)}%`;
}
