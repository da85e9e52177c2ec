/**
 * Human-readable text for dead letters (tables, detail, stats, summaries). Pure functions returning
 * lines, shared by the CLI and the demo; `--json` bypasses them.
 */
import { pushAll } from '../shared/arrays';
import type { DeadLetter } from './dead-letter';
import type { ReplaySummary } from './dead-letter-replayer';
import type { DeadLetterStats, DeadLetterSummary } from './dead-letter.service';

/** Longest error text shown in a table cell; `dlq show` prints it whole. @defaultValue 60 */
const ERROR_CELL = 60;

function oneLine(text: string, max: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

function shortTime(iso: string): string {
  return iso.replace(/\.\d+Z$/, 'Z');
}

/** `3d 4h`, `5m 12s`, `1h`, `42s`: the largest unit and the next one are enough to judge an age. */
export function formatAge(seconds: number): string {
  const units: Array<[string, number]> = [
    ['d', 86_400],
    ['h', 3_600],
    ['m', 60],
    ['s', 1],
  ];
  const total = Math.max(0, Math.round(seconds));
  const i = units.findIndex(([, size]) => total >= size);
  if (i < 0) return '0s';
  const [unit, size] = units[i];
  const next = units[i + 1];
  const rest = next ? Math.floor((total % size) / next[1]) : 0;
  return rest > 0 ? `${Math.floor(total / size)}${unit} ${rest}${next[0]}` : `${Math.floor(total / size)}${unit}`;
}

/** Columns padded to their widest cell; the last column is not padded. */
export function renderTable(header: string[], rows: string[][]): string[] {
  // a loop, not Math.max(...cells): a spread passes one argument per row and overflows the stack
  const widths = header.map((h) => h.length);
  for (const r of rows) for (let i = 0; i < widths.length; i++) widths[i] = Math.max(widths[i], r[i].length);
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i])))
      .join('  ')
      .trimEnd();
  return [line(header), ...rows.map(line)];
}

export function formatDeadLetterTable(entries: Array<DeadLetter | DeadLetterSummary>): string[] {
  const rows = entries.map((dl) => [
    dl.id,
    dl.kind,
    dl.type ?? '-',
    dl.planId ?? '-',
    String(dl.attempts),
    String(dl.replayCount),
    shortTime(dl.lastFailedAt),
    oneLine(dl.error.message, ERROR_CELL),
  ]);
  return renderTable(['ID', 'KIND', 'TYPE', 'PLAN', 'TRIES', 'REPLAYS', 'DEAD-LETTERED', 'ERROR'], rows);
}

/** `dlq list` text: the table, then how many more matched than shown. */
export function formatList(total: number, entries: Array<DeadLetter | DeadLetterSummary>): string[] {
  if (total === 0) return ['no dead letters match'];
  const lines = formatDeadLetterTable(entries);
  lines.push(
    total > entries.length
      ? `${entries.length} of ${total} shown; raise --limit to see more`
      : `${total} dead letter${total === 1 ? '' : 's'}`,
  );
  return lines;
}

function indent(text: string, by = '  '): string[] {
  return text.split('\n').map((l) => `${by}${l}`);
}

/** `dlq show` text: everything an operator needs to decide whether to fix, replay or purge. */
export function formatDetail(dl: DeadLetter): string[] {
  const field = (name: string, value: string) => `${name.padEnd(16)}${value}`;
  const lines = [
    field('id', dl.id),
    field('kind', dl.kind),
    field('event id', dl.eventId ?? '-'),
    field('type', dl.type ?? '-'),
    field('plan', dl.planId ?? '-'),
    field('session', dl.sessionId ?? '-'),
    field('attempts', String(dl.attempts)),
    field('first failed', dl.firstFailedAt),
    field('last failed', dl.lastFailedAt),
    field('replay count', String(dl.replayCount)),
    field('source', `${dl.source.queue} job ${dl.source.jobId}`),
    field('worker version', dl.workerVersion),
    '',
    `error: ${dl.error.message}${dl.error.code ? ` (code ${dl.error.code})` : ''}`,
  ];
  if (dl.error.violations && dl.error.violations.length > 0) {
    lines.push('', 'violations:');
    // messages are full sentences that start with their path; add the path only when one does not
    for (const v of dl.error.violations)
      lines.push(`  - ${v.path && !v.message.startsWith(v.path) ? `${v.path}: ${v.message}` : v.message}`);
  }
  // an event's JSON can run to many thousands of lines: appended with a loop, not push(...lines)
  if (dl.error.stack) pushAll(lines, ['', 'stack:', ...indent(dl.error.stack)]);
  pushAll(lines, ['', 'event (verbatim):', ...indent(JSON.stringify(dl.event, null, 2) ?? 'undefined')]);
  return lines;
}

export function formatStats(stats: DeadLetterStats): string[] {
  if (stats.total === 0) return ['dead-letter queue is empty'];
  const counts = (record: Record<string, number>) =>
    Object.entries(record).sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]));
  const lines = [`${stats.total} dead letter${stats.total === 1 ? '' : 's'}`];
  if (stats.oldest)
    lines.push(
      `oldest: ${stats.oldest.id}, dead-lettered ${formatAge(stats.oldest.ageSeconds)} ago (${shortTime(stats.oldest.lastFailedAt)})`,
    );
  pushAll(lines, [
    '',
    ...renderTable(
      ['KIND', 'COUNT'],
      counts(stats.byKind).map(([k, n]) => [k, String(n)]),
    ),
  ]);
  pushAll(lines, [
    '',
    ...renderTable(
      ['TYPE', 'COUNT'],
      counts(stats.byType).map(([t, n]) => [t, String(n)]),
    ),
  ]);
  return lines;
}

/** The end-of-replay line(s): replayed, already stored, failed again. */
export function formatReplaySummary(s: ReplaySummary): string[] {
  if (s.selected === 0) return ['no dead letters match; nothing replayed'];
  const stored = s.alreadyStored === null ? 'not checked' : String(s.alreadyStored);
  const events = `${s.replayed} event${s.replayed === 1 ? '' : 's'}`;
  if (s.dryRun) return [`dry run: would replay ${events}; already stored: ${stored}; nothing sent`];
  const failed = s.failedAgain === null ? 'not checked (use --wait)' : String(s.failedAgain);
  const jobs = `${s.jobIds.length} job${s.jobIds.length === 1 ? '' : 's'}`;
  const lines = [`replayed ${events} in ${jobs}; already stored: ${stored}; failed again: ${failed}`];
  if (s.vanished > 0)
    lines.push(
      `${s.vanished} selected dead letter${s.vanished === 1 ? ' was' : 's were'} removed by someone else meanwhile`,
    );
  if (s.failedAgainIds.length > 0) lines.push(`dead-lettered again: ${s.failedAgainIds.join(', ')}`);
  if (s.kept.length > 0)
    pushAll(lines, [
      `not replayed, still dead letters (${s.kept.length}):`,
      ...s.kept.map((k) => `  ${k.id}: ${k.reason}`),
    ]);
  if (s.pending > 0)
    lines.push(`${s.pending} replayed job${s.pending === 1 ? ' is' : 's are'} still unfinished (is a worker running?)`);
  return lines;
}
