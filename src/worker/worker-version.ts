import * as fs from 'node:fs';
import * as path from 'node:path';

let cached: string | undefined;

/**
 * The `version` of plan-ledger's package.json, recorded in every dead letter. Found by walking up
 * from this file, so it works from the sources (tsx, jest) and from `dist/` alike.
 */
export function workerVersion(): string {
  if (cached !== undefined) return cached;
  for (let dir = __dirname; ; dir = path.dirname(dir)) {
    const file = path.join(dir, 'package.json');
    try {
      const pkg = JSON.parse(fs.readFileSync(file, 'utf8')) as { name?: string; version?: string };
      if (pkg.name === 'plan-ledger' && pkg.version) return (cached = pkg.version);
    } catch {
      // not here: keep walking up
    }
    if (path.dirname(dir) === dir) return (cached = '0.0.0-unknown');
  }
}
