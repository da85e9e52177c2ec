/**
 * Every command the documents show runs as written, as far as parsing goes: each fenced
 * `plan-ledger ...` / `npx plan-ledger ...` command (and each `npm run` script that runs the CLI)
 * is parsed by the CLI's own command tree, built in process with every action replaced by nothing,
 * so a misspelt command, an unknown option, a missing value or argument, or an extra argument fails
 * here as it would for a reader, and nothing runs (no server needed). Each `npm run <script>` must
 * name a script of package.json. The CLI reference's synopsis is expanded into its variants first.
 * The examples the CLI's own `--help` texts give are held to the same parse.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { CommanderError, type Command } from 'commander';
import { buildProgram } from '../../src/cli/main';
import { commandsOfFences, expandSynopsis, shellWords, type DocCommand, type Word } from '../support/doc-commands';
import { documentFiles, readMarkdown, REPO_ROOT } from '../support/markdown';

const SCRIPTS = (
  JSON.parse(fs.readFileSync(path.join(REPO_ROOT, 'package.json'), 'utf8')) as {
    scripts: Record<string, string>;
  }
).scripts;

/** What the CLI says of a command line, parsed only: '' when it is accepted. */
async function parseOnly(argv: string[]): Promise<string> {
  const errors: string[] = [];
  const program = buildProgram({ env: {}, out: () => undefined, err: (line) => errors.push(line) });
  const stub = (cmd: Command): void => {
    if (cmd.commands.length === 0) cmd.action(() => undefined);
    cmd.commands.forEach(stub);
  };
  program.commands.forEach(stub);
  try {
    await program.parseAsync(argv, { from: 'user' });
    return '';
  } catch (err) {
    if (!(err instanceof CommanderError)) throw err;
    return err.exitCode === 0 ? '' : (errors[0] ?? err.message);
  }
}

/** The CLI words an npm script passes before its own arguments, or undefined when it runs no CLI. */
function cliWordsOfScript(script: string): Word[] | undefined {
  const m = /\bbin\/plan-ledger\.js\b(.*)$/.exec(SCRIPTS[script] ?? '');
  return m ? shellWords(m[1]) : undefined;
}

/** Each variant of a documented command that the CLI or npm refuses, with the reason. */
async function refusals(command: DocCommand): Promise<string[]> {
  let words = command.words;
  if (command.kind === 'npm-script') {
    const [script, ...args] = words;
    if (!(script.text in SCRIPTS)) return [`npm run ${script.text}: package.json has no such script`];
    const cli = cliWordsOfScript(script.text);
    if (!cli) return [];
    words = [...cli, ...args];
  }
  const failed: string[] = [];
  for (const argv of expandSynopsis(words)) {
    const error = await parseOnly(argv);
    if (error) failed.push(`plan-ledger ${argv.join(' ')}: ${error}`);
  }
  return failed;
}

const commands = documentFiles().flatMap((file) => commandsOfFences(file, readMarkdown(file).fences));

/** The example command lines of every command's `--help` (the program's included), as printed. */
function helpExamples(): DocCommand[] {
  const lines: string[] = [];
  const program = buildProgram({ env: {}, out: (line) => lines.push(...line.split('\n')), err: () => undefined });
  const all: Command[] = [];
  const walk = (cmd: Command): void => {
    all.push(cmd);
    cmd.commands.forEach(walk);
  };
  walk(program);
  for (const cmd of all) cmd.outputHelp();
  const examples = lines.filter((line) => /^\s+(npx )?plan-ledger\s/.test(line));
  return commandsOfFences('--help', [{ lang: 'bash', line: 1, lines: examples }]);
}

describe('documented commands', () => {
  it('finds the commands of the CLI reference and the npm scripts', () => {
    const texts = commands.map((c) => `${c.file}: ${c.text}`);
    expect(texts).toContain('README.md: npm run demo');
    expect(texts).toContain('README.md: npm test');
    expect(commands.filter((c) => c.file === 'docs/cli.md' && c.kind === 'cli').length).toBeGreaterThanOrEqual(30);
  });

  it.each(commands.map((c) => [`${c.file}:${c.line} ${c.text}`, c] as const))('%s', async (_name, command) => {
    expect(await refusals(command)).toEqual([]);
  });

  it.each(helpExamples().map((c) => [c.text, c] as const))('--help example: %s', async (_name, command) => {
    expect(await refusals(command)).toEqual([]);
  });

  it("keeps .ci/run running the README's test command", () => {
    const readme = commandsOfFences('README.md', readMarkdown('README.md').fences.slice(0, 1));
    expect(readme.map((c) => c.text)).toEqual(['npm run demo', 'npm test']);
    const ci = fs
      .readFileSync(path.join(REPO_ROOT, '.ci', 'run'), 'utf8')
      .split('\n')
      .map((line) => shellWords(line).map((w) => w.text));
    expect(ci.some((words) => words[0] === 'npm' && words[1] === 'test')).toBe(true);
  });
});

describe('the check itself', () => {
  it('refuses a misspelt command, an unknown option, a missing argument and an unknown script', async () => {
    const check = (file: string, fence: string) =>
      Promise.all(commandsOfFences(file, [{ lang: 'bash', line: 1, lines: [fence] }]).map(refusals));
    expect(await check('x.md', 'npx plan-ledger plans lineages plan-42')).toEqual([
      [expect.stringContaining("unknown command 'lineages'")],
    ]);
    expect(await check('x.md', 'plan-ledger dlq list --kinds invalid')).toEqual([
      [expect.stringContaining("unknown option '--kinds'")],
    ]);
    expect(await check('x.md', 'plan-ledger steps output plan-42')).toEqual([
      [expect.stringContaining("missing required argument 'step'")],
    ]);
    expect(await check('x.md', 'npm run bench:nothing')).toEqual([
      ['npm run bench:nothing: package.json has no such script'],
    ]);
  });

  it('parses every variant of a synopsis, so one wrong alternative fails', async () => {
    const words = shellWords('plans fork <planId> (--from-layer N | --from-checkpint ID) [--json]');
    expect(expandSynopsis(words)).toEqual([
      ['plans', 'fork', 'planId', '--from-layer', '1', '--json'],
      ['plans', 'fork', 'planId', '--from-layer', '1'],
      ['plans', 'fork', 'planId', '--from-checkpint', 'sample-id', '--json'],
    ]);
    const [command] = commandsOfFences('x.md', [
      { lang: 'bash', line: 1, lines: [`npx plan-ledger ${words.map((w) => w.text).join(' ')}`] },
    ]);
    expect(await refusals(command)).toEqual([expect.stringContaining("unknown option '--from-checkpint'")]);
  });

  it('splits shell lines as the shell does: env, quotes, pipes, redirections, comments', () => {
    const fence = [
      "WORKER_SHARDS=0-2 plan-ledger worker && plan-ledger prices set --model 'gpt-4o*' --from ISO --input 1 --output 2",
      'plan-ledger dlq list --json | jq . > out.json   # a comment',
      'npm ci && npm run bench:e2e -- --cluster',
    ];
    const found = commandsOfFences('x.md', [{ lang: 'bash', line: 1, lines: fence }]);
    expect(found.map((c) => [c.kind, c.words.map((w) => w.text)])).toEqual([
      ['cli', ['worker']],
      ['cli', ['prices', 'set', '--model', 'gpt-4o*', '--from', 'ISO', '--input', '1', '--output', '2']],
      ['cli', ['dlq', 'list', '--json']],
      ['npm-script', ['bench:e2e', '--cluster']],
    ]);
  });
});
