import * as fs from 'node:fs';

/**
 * Appends at `position` (the file's known size). writeSync may write less than asked: loop. On
 * failure (disk full) the file is cut back to `position`, so no half record is left for the next
 * write to glue itself to.
 */
export function appendAllSync(fd: number, buffer: Buffer, position: number): void {
  let written = 0;
  try {
    while (written < buffer.length)
      written += fs.writeSync(fd, buffer, written, buffer.length - written, position + written);
  } catch (err) {
    try {
      fs.ftruncateSync(fd, position);
    } catch {
      // The write error is the one worth reporting.
    }
    throw err;
  }
}
