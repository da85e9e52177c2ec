/**
 * CLI start-up: whole-process CPU (user + sys), wall time and peak RSS of the
 * built CLI (`npm run build` first), measured by GNU time (/usr/bin/time), for
 * - `--help` (target <= 150 ms),
 * - a read command on an empty, migrated SQLite database: `plans list` (its start and connect
 *   overhead; target <= 300 ms),
 * - `--version` and `node -e 0`, the floor of any Node process on this machine, in the same run;
 * and, with `--baseline DIR` (another checkout with its own build, e.g. of main), the same commands
 * of that build, run in turn with this one's (A B A B ...) so that a comparison survives the
 * machine's drift. Prints medians and, per pair, the ratio this/baseline. No target is asserted.
 *
 *   npm run bench:cli [-- --runs 7] [-- --baseline /path/to/main/checkout] [-- --json]
 */
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { BenchOptions } from './support/cli-options';

const options = new BenchOptions('npm run bench:cli -- [options]', [
  { name: 'runs', value: 'n', help: 'counted runs of each command (default 7; one warm-up run is not counted)' },
  { name: 'baseline', value: 'dir', help: 'a checkout of another version, built (npm run build), to compare with' },
  { name: 'json', help: 'print the results as JSON' },
]);
const RUNS = options.number('runs', 7);
const BASELINE = options.string('baseline', '');
const JSON_OUT = options.flag('json');
const ROOT = path.join(__dirname, '..');
const TIME = '/usr/bin/time';

interface Sample {
  cpu: number;
  wall: number;
  rssMb: number;
  code: number | null;
}

function binOf(root: string): string {
  const bin = path.join(root, 'bin', 'plan-ledger.js');
  if (!fs.existsSync(path.join(root, 'dist', 'src', 'cli', 'main.js')))
    throw new Error(`${root} has no build: run npm run build there first`);
  return bin;
}

/** One run under GNU time: user + sys CPU, elapsed wall time, max RSS. */
function measure(argv: string[], env: NodeJS.ProcessEnv): Sample {
  const r = spawnSync(TIME, ['-f', '@@ %U %S %e %M', ...argv], { env, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  const line = /@@ (\S+) (\S+) (\S+) (\S+)\s*$/.exec(r.stderr ?? '');
  if (!line) throw new Error(`${argv.join(' ')}: no timing from ${TIME} (is GNU time installed?)\n${r.stderr}`);
  // GNU time exits with the command's status
  return {
    cpu: Number(line[1]) + Number(line[2]),
    wall: Number(line[3]),
    rssMb: Number(line[4]) / 1024,
    code: r.status,
  };
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

function main(): void {
  if (!fs.existsSync(TIME)) throw new Error(`${TIME} not found: install GNU time (apt-get install time)`);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'plan-ledger-bench-cli-'));
  try {
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      DATABASE_URL: `sqlite:${path.join(dir, 'empty.sqlite')}`,
      LOG_LEVEL: 'warn',
    };
    delete env.PLAN_LEDGER_FROM_SOURCE; // the build, as an installed package runs
    const builds: Array<[string, string]> = [['this', binOf(ROOT)]];
    if (BASELINE) builds.push(['baseline', binOf(path.resolve(BASELINE))]);
    const migrate = measure([process.execPath, builds[0][1], 'migrate'], env);
    if (migrate.code !== 0) throw new Error('migrate of the empty SQLite database failed');
    const commands: Array<[string, string[]]> = [
      ['node -e 0', []],
      ['--version', ['--version']],
      ['--help', ['--help']],
      ['plans list (empty SQLite)', ['plans', 'list']],
    ];
    const samples = new Map<string, Sample[]>();
    for (let run = 0; run <= RUNS; run++) {
      for (const [name, args] of commands) {
        for (const [build, bin] of builds) {
          if (name === 'node -e 0' && build !== 'this') continue;
          const argv = name === 'node -e 0' ? [process.execPath, '-e', '0'] : [process.execPath, bin, ...args];
          const s = measure(argv, env);
          if (s.code !== 0) throw new Error(`${build}: ${argv.slice(1).join(' ')} exited ${s.code}`);
          if (run === 0) continue; // warm-up
          const key = `${build}\t${name}`;
          samples.set(key, [...(samples.get(key) ?? []), s]);
        }
      }
    }
    const rows = commands.map(([name]) => {
      const mine = samples.get(`this\t${name}`)!;
      const base = samples.get(`baseline\t${name}`);
      const row: Record<string, unknown> = {
        command: name,
        cpuS: median(mine.map((s) => s.cpu)),
        wallS: median(mine.map((s) => s.wall)),
        rssMb: Math.round(median(mine.map((s) => s.rssMb))),
      };
      if (base) {
        row.baselineCpuS = median(base.map((s) => s.cpu));
        row.baselineWallS = median(base.map((s) => s.wall));
        row.baselineRssMb = Math.round(median(base.map((s) => s.rssMb)));
        row.cpuRatio = Number(median(mine.map((s, i) => s.cpu / Math.max(base[i].cpu, 0.001))).toFixed(3));
        row.wallRatio = Number(median(mine.map((s, i) => s.wall / Math.max(base[i].wall, 0.001))).toFixed(3));
      }
      return row;
    });
    const result = {
      runs: RUNS,
      baseline: BASELINE || null,
      loadAvg: os.loadavg().map((l) => Number(l.toFixed(2))),
      cpus: os.cpus().length,
      node: process.version,
      rows,
    };
    if (JSON_OUT) return void process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
    process.stdout.write(
      `CLI start-up, medians of ${RUNS} runs (GNU time, whole process); load average ${result.loadAvg.join(' ')} on ${result.cpus} CPUs\n`,
    );
    for (const r of rows) {
      const base =
        r.baselineCpuS === undefined
          ? ''
          : `  | baseline ${r.baselineCpuS} s cpu, ${r.baselineWallS} s wall, ${r.baselineRssMb} MB | this/baseline cpu ${r.cpuRatio}x, wall ${r.wallRatio}x`;
      process.stdout.write(
        `${String(r.command).padEnd(28)} ${r.cpuS} s cpu, ${r.wallS} s wall, ${r.rssMb} MB${base}\n`,
      );
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

main();
