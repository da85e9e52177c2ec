import type { Fence } from './markdown';

/**
 * The commands a document shows in its shell blocks, as a reader would type them, and the
 * synopsis notation of the CLI reference expanded into command lines to parse.
 *
 * A shell line is split into words as the shell splits them (quotes kept together), then into
 * commands at `&&`, `||`, `;` and a pipe; leading `NAME=value` assignments, redirections and
 * comments go. What remains is kept when it runs plan-ledger (`plan-ledger ...`,
 * `npx plan-ledger ...`) or an npm script (`npm run <script> ...`, `npm test`).
 *
 * The synopsis notation, in unquoted words: `[...]` optional, `(a | b)` a choice, `a|b` a choice of
 * words, `<name>` (`<name...>`: one or more) and capitalised words (`ISO`, `N`, `FILE`) values to
 * fill in. A line without it is one command line.
 */

const SHELL_LANGS = new Set(['', 'bash', 'sh', 'shell', 'console', 'zsh']);

export interface DocCommand {
  file: string;
  line: number;
  /** The command as written (one command of its line). */
  text: string;
  kind: 'cli' | 'npm-script';
  /** cli: the words after `plan-ledger`; npm-script: the script name, then the words after `--`. */
  words: Word[];
}

export interface Word {
  text: string;
  /** Any part of it was quoted: no synopsis notation in it. */
  quoted: boolean;
}

export function commandsOfFences(file: string, fences: Fence[]): DocCommand[] {
  const found: DocCommand[] = [];
  for (const fence of fences.filter((f) => SHELL_LANGS.has(f.lang))) {
    let pending = '';
    fence.lines.forEach((raw, i) => {
      const text = pending + raw;
      if (text.endsWith('\\')) {
        pending = text.slice(0, -1) + ' ';
        return;
      }
      pending = '';
      const line = fence.line + i;
      for (const words of splitCommands(shellWords(text.replace(/^\s*\$\s+/, '')))) {
        const command = recognise(words);
        if (command) found.push({ file, line, text: words.map((w) => w.text).join(' '), ...command });
      }
    });
  }
  return found;
}

/** Shell words, quotes removed; a `#` that starts a word starts a comment. */
export function shellWords(line: string): Word[] {
  const words: Word[] = [];
  let current: Word | undefined;
  for (let i = 0; i < line.length; i++) {
    const c = line[i];
    if (c === ' ' || c === '\t') {
      if (current) words.push(current);
      current = undefined;
    } else if (c === '#' && !current) {
      break;
    } else if (c === "'" || c === '"') {
      const end = line.indexOf(c, i + 1);
      if (end < 0) throw new Error(`unclosed ${c} in: ${line}`);
      current = { text: (current?.text ?? '') + line.slice(i + 1, end), quoted: true };
      i = end;
    } else {
      current = { text: (current?.text ?? '') + c, quoted: current?.quoted ?? false };
    }
  }
  if (current) words.push(current);
  return words;
}

const SEPARATORS = new Set(['&&', '||', ';', '|']);
const REDIRECT = /^(\d?>>?|<)(.*)$/;

/** Commands at `&&`, `||`, `;` and pipes; a `|` inside `[...]` or `(...)` is a synopsis choice. */
function splitCommands(words: Word[]): Word[][] {
  const commands: Word[][] = [[]];
  let depth = 0;
  for (let i = 0; i < words.length; i++) {
    const w = words[i];
    if (!w.quoted) {
      depth += (w.text.match(/^[[(]+/)?.[0].length ?? 0) - (w.text.match(/[\])]+$/)?.[0].length ?? 0);
      if (depth === 0 && SEPARATORS.has(w.text)) {
        commands.push([]);
        continue;
      }
      const redirect = /^[[(]*<[^>]*>[\])]*$/.test(w.text) ? null : REDIRECT.exec(w.text);
      if (redirect) {
        if (redirect[2] === '') i++; // `> file`: the file is the next word
        continue;
      }
      if (w.text.endsWith(';') && depth === 0) {
        commands[commands.length - 1].push({ ...w, text: w.text.slice(0, -1) });
        commands.push([]);
        continue;
      }
    }
    commands[commands.length - 1].push(w);
  }
  return commands.filter((c) => c.length > 0);
}

function recognise(words: Word[]): Pick<DocCommand, 'kind' | 'words'> | undefined {
  let rest = words;
  while (rest.length > 0 && !rest[0].quoted && /^[A-Za-z_][A-Za-z0-9_]*=/.test(rest[0].text)) rest = rest.slice(1);
  const texts = rest.map((w) => w.text);
  if (texts[0] === 'npx' && texts[1] === 'plan-ledger') return { kind: 'cli', words: rest.slice(2) };
  if (texts[0] === 'plan-ledger') return { kind: 'cli', words: rest.slice(1) };
  if (texts[0] === 'npm' && texts[1] === 'test')
    return { kind: 'npm-script', words: [{ text: 'test', quoted: false }] };
  if (texts[0] === 'npm' && (texts[1] === 'run' || texts[1] === 'run-script') && rest.length > 2) {
    const dashes = texts.indexOf('--');
    return { kind: 'npm-script', words: [rest[2], ...(dashes < 0 ? [] : rest.slice(dashes + 1))] };
  }
  return undefined;
}

type Node = { kind: 'word'; text: string } | { kind: 'group'; id: number; optional: boolean; alts: Node[][] };

/**
 * The command lines a synopsis stands for: every optional part in, every optional part out, and
 * each alternative of each choice once (the others at their first). Values become sample values.
 */
export function expandSynopsis(words: Word[]): string[][] {
  const groups: Extract<Node, { kind: 'group' }>[] = [];
  const tokens = tokenize(words);
  let pos = 0;
  const group = (optional: boolean, alts: Node[][]): Node => {
    const g = { kind: 'group' as const, id: groups.length, optional, alts };
    groups.push(g);
    return g;
  };
  const parseSeq = (closers: string[]): Node[] => {
    const seq: Node[] = [];
    while (pos < tokens.length && !closers.includes(tokens[pos])) {
      const t = tokens[pos++];
      if (t === '[' || t === '(') {
        const close = t === '[' ? ']' : ')';
        const alts = [parseSeq([close, '|'])];
        while (tokens[pos] === '|') {
          pos++;
          alts.push(parseSeq([close, '|']));
        }
        if (tokens[pos++] !== close) throw new Error(`unclosed ${t} in: ${words.map((w) => w.text).join(' ')}`);
        seq.push(group(t === '[', alts));
      } else if (t === ']' || t === ')' || t === '|') {
        throw new Error(`unexpected ${t} in: ${words.map((w) => w.text).join(' ')}`);
      } else if (t.includes('|') && !t.startsWith('<') && !t.startsWith('\0')) {
        seq.push(
          group(
            false,
            t.split('|').map((alt) => [{ kind: 'word', text: sampleValue(alt) }]),
          ),
        );
      } else {
        seq.push(...valueWords(t));
      }
    }
    return seq;
  };
  const root = parseSeq([]);
  if (pos < tokens.length) throw new Error(`unexpected ${tokens[pos]} in: ${words.map((w) => w.text).join(' ')}`);

  const render = (choice: (g: number) => number): string[] => {
    const out: string[] = [];
    const walk = (nodes: Node[]) => {
      for (const n of nodes) {
        if (n.kind === 'word') out.push(n.text);
        else if (choice(n.id) >= 0) walk(n.alts[choice(n.id)]);
      }
    };
    walk(root);
    return out;
  };
  const variants = [render(() => 0), render((g) => (groups[g].optional ? -1 : 0))];
  for (const g of groups) for (let k = 1; k < g.alts.length; k++) variants.push(render((id) => (id === g.id ? k : 0)));
  const unique = new Map(variants.map((v) => [JSON.stringify(v), v]));
  return [...unique.values()];
}

/** Synopsis tokens: brackets, parentheses and a lone `|` apart; a quoted word is marked with \0. */
function tokenize(words: Word[]): string[] {
  const tokens: string[] = [];
  for (const w of words) {
    if (w.quoted) {
      tokens.push(`\0${w.text}`);
      continue;
    }
    const m = /^([[(]*)(.*?)([\])]*)$/.exec(w.text)!;
    tokens.push(...m[1], ...(m[2] === '' ? [] : [m[2]]), ...m[3]);
  }
  return tokens;
}

function valueWords(token: string): Node[] {
  if (token.startsWith('\0')) return [{ kind: 'word', text: token.slice(1) }];
  const placeholder = /^<([^>]+?)(\.\.\.)?>$/.exec(token);
  if (placeholder) {
    const value = sampleValue(placeholder[1]);
    return placeholder[2]
      ? [value, `${value}-2`].map((text) => ({ kind: 'word', text }))
      : [{ kind: 'word', text: value }];
  }
  return [{ kind: 'word', text: sampleValue(token) }];
}

/** A value for a placeholder (`ISO`, `N`, `<planId>`); any other word as it is. */
function sampleValue(word: string): string {
  if (word === 'ISO') return '2026-02-04';
  if (word === 'N' || word === 'MS') return '1';
  if (word === 'USD') return '2.5';
  if (/^[A-Z][A-Z0-9_]*$/.test(word) || /^<.*>$/.test(word))
    return `sample-${word.replace(/[<>|.]/g, '').toLowerCase()}`;
  return word;
}
