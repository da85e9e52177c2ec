import * as fs from 'node:fs';
import * as path from 'node:path';

/**
 * Just enough Markdown for the documents' own tests: the headings a link can point at (GitHub's
 * anchors), the links, and the fenced code blocks. Text inside fences and code spans is neither a
 * heading nor a link.
 */

export const REPO_ROOT = path.join(__dirname, '..', '..');

/** The documents a newcomer reads, relative to the repository root. */
export function documentFiles(): string[] {
  const docs = fs
    .readdirSync(path.join(REPO_ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .sort()
    .map((f) => `docs/${f}`);
  return ['README.md', ...docs, 'BENCHMARKS.md', 'clients/python/README.md'];
}

export interface Fence {
  /** The info string after the opening backticks (`bash`, `ts`, ...), empty when none. */
  lang: string;
  /** 1-based line of the first line inside the fence. */
  line: number;
  lines: string[];
}

export interface MarkdownDoc {
  file: string;
  fences: Fence[];
  /** Every anchor GitHub gives the document's headings, duplicates numbered as GitHub numbers them. */
  anchors: Set<string>;
  /** Links outside code: target as written and its 1-based line. */
  links: { target: string; line: number }[];
}

const FENCE = /^\s*(```+|~~~+)\s*([\w+-]*)/;

export function readMarkdown(file: string): MarkdownDoc {
  const lines = fs.readFileSync(path.join(REPO_ROOT, file), 'utf8').split('\n');
  const fences: Fence[] = [];
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  const links: MarkdownDoc['links'] = [];
  let open: { marker: string; fence: Fence } | undefined;
  lines.forEach((text, i) => {
    const fence = FENCE.exec(text);
    if (open) {
      if (fence && fence[1].startsWith(open.marker) && text.trim() === fence[1]) {
        fences.push(open.fence);
        open = undefined;
      } else open.fence.lines.push(text);
      return;
    }
    if (fence) {
      open = { marker: fence[1], fence: { lang: fence[2].toLowerCase(), line: i + 2, lines: [] } };
      return;
    }
    const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(text);
    if (heading) {
      const base = githubAnchor(heading[1]);
      const n = seen.get(base) ?? 0;
      seen.set(base, n + 1);
      anchors.add(n === 0 ? base : `${base}-${n}`);
    }
    const prose = text.replace(/`[^`]*`/g, '');
    for (const m of prose.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) links.push({ target: m[1], line: i + 1 });
  });
  return { file, fences, anchors, links };
}

/**
 * The anchor GitHub makes of a heading: its text without markup, lower case, punctuation dropped
 * (letters, digits, `_`, `-` and spaces stay), each space a `-`.
 */
export function githubAnchor(heading: string): string {
  const text = heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/<[^>]+>/g, '')
    .replace(/[`*]/g, '');
  return text
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}_\- ]/gu, '')
    .replace(/ /g, '-');
}
