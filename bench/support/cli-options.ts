/** Command-line options of the bench scripts: `--name value`, `--flag`, `--help`. */

export interface OptionSpec {
  name: string;
  /** Shown in --help; a value option shows `<value>`. */
  help: string;
  value?: string;
}

export class BenchOptions {
  constructor(
    private readonly usage: string,
    private readonly specs: OptionSpec[],
    private readonly argv = process.argv.slice(2),
  ) {
    const known = new Set(specs.map((s) => `--${s.name}`));
    for (let i = 0; i < argv.length; i++) {
      const arg = argv[i];
      if (arg === '--help' || arg === '-h') this.exit(0);
      if (!known.has(arg)) this.exit(2, `unknown option ${arg}`);
      if (specs.find((s) => `--${s.name}` === arg)!.value) {
        if (argv[i + 1] === undefined) this.exit(2, `${arg} needs a value`);
        i++;
      }
    }
  }

  flag(name: string): boolean {
    return this.argv.includes(`--${name}`);
  }

  string(name: string, fallback: string): string {
    const i = this.argv.indexOf(`--${name}`);
    return i >= 0 ? this.argv[i + 1] : fallback;
  }

  number(name: string, fallback: number): number {
    if (!this.argv.includes(`--${name}`)) return fallback;
    const text = this.string(name, '').replace(/_/g, '');
    const n = Number(text.replace(/k$/i, '')) * (/k$/i.test(text) ? 1_000 : 1);
    if (!Number.isFinite(n) || n < 0) this.exit(2, `--${name} must be a number >= 0, not ${text}`);
    return n;
  }

  /** A comma-separated subset of `all` (every one when the option is absent). */
  list(name: string, all: readonly string[]): Set<string> {
    const text = this.string(name, '');
    if (!text) return new Set(all);
    const chosen = text
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean);
    const unknown = chosen.filter((c) => !all.includes(c));
    if (unknown.length) this.exit(2, `--${name}: unknown ${unknown.join(', ')} (choose from ${all.join(', ')})`);
    return new Set(chosen);
  }

  private exit(code: number, message?: string): never {
    const lines = [
      this.usage,
      '',
      'Options:',
      ...this.specs.map((s) => `  --${s.name}${s.value ? ` <${s.value}>` : ''}`.padEnd(28) + s.help),
      '  --help'.padEnd(28) + 'this text',
    ];
    if (message) process.stderr.write(`${message}\n\n`);
    (code === 0 ? process.stdout : process.stderr).write(`${lines.join('\n')}\n`);
    process.exit(code);
  }
}
