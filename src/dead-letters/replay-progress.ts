/**
 * Progress of a long replay on stderr (stdout stays clean for `--json`): a redrawn bar on a
 * terminal, periodic plain lines when stderr is a file or a pipe (CI logs, `2> log`).
 */
import type { ReplayProgress } from './dead-letter-replayer';

export interface ProgressStream {
  isTTY?: boolean;
  write(chunk: string): unknown;
}

export interface ProgressReporterOptions {
  /** Label in front of the bar. @defaultValue `replay` */
  label?: string;
  /** Smallest redraw interval on a terminal. @defaultValue 100 ms */
  ttyIntervalMs?: number;
  /** Interval between plain lines when not a terminal. @defaultValue 2000 ms */
  lineIntervalMs?: number;
  /** Bar width in characters. @defaultValue 30 */
  width?: number;
  now?: () => number;
}

export interface ProgressReporter {
  update(progress: ReplayProgress): void;
  /** Ends the bar's line; call once, also after an error. */
  finish(): void;
}

export function createProgressReporter(stream: ProgressStream, opts: ProgressReporterOptions = {}): ProgressReporter {
  const label = opts.label ?? 'replay';
  const tty = stream.isTTY === true;
  const interval = tty ? (opts.ttyIntervalMs ?? 100) : (opts.lineIntervalMs ?? 2_000);
  const width = opts.width ?? 30;
  const now = opts.now ?? Date.now;
  let lastDraw = -Infinity;
  let drawn = false;
  let last: ReplayProgress | undefined;

  const text = ({ done, total }: ReplayProgress) => {
    const ratio = total === 0 ? 1 : done / total;
    const pct = `${Math.floor(ratio * 100)}%`.padStart(4);
    if (!tty) return `${label}: ${done}/${total} (${pct.trim()})`;
    const filled = Math.round(ratio * width);
    return `${label} [${'#'.repeat(filled)}${'-'.repeat(width - filled)}] ${done}/${total} ${pct}`;
  };

  const draw = (p: ReplayProgress) => {
    stream.write(tty ? `\r${text(p)}` : `${text(p)}\n`);
    drawn = true;
    lastDraw = now();
  };

  return {
    update(progress) {
      last = progress;
      if (progress.done >= progress.total || now() - lastDraw >= interval) draw(progress);
    },
    finish() {
      if (last && last.done < last.total && !tty) draw(last);
      if (drawn && tty) stream.write('\n');
    },
  };
}
