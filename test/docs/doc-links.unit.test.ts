/**
 * The documents hold together: every relative link of README.md, docs/*.md, BENCHMARKS.md and the
 * Python client's README reaches a file, and its `#anchor` a heading of that file; every
 * `docs/<page>.md#anchor` the code, tests and scripts cite exists, and so does every README section
 * they cite by name; every page of docs/ starts with a contents list of its sections.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { documentFiles, readMarkdown, REPO_ROOT, type MarkdownDoc } from '../support/markdown';

const docs = new Map<string, MarkdownDoc>(documentFiles().map((f) => [f, readMarkdown(f)]));

function markdown(file: string): MarkdownDoc {
  let doc = docs.get(file);
  if (!doc) docs.set(file, (doc = readMarkdown(file)));
  return doc;
}

/** Why a link from `from` to `target` (path and/or #anchor) leads nowhere, or undefined when it resolves. */
function brokenLink(from: string, target: string): string | undefined {
  const [pathPart, anchor] = target.split('#', 2) as [string, string | undefined];
  const file = pathPart === '' ? from : path.posix.normalize(path.posix.join(path.posix.dirname(from), pathPart));
  if (file.startsWith('..')) return `${target}: outside the repository`;
  if (!fs.existsSync(path.join(REPO_ROOT, file))) return `${target}: no file ${file}`;
  if (anchor === undefined) return undefined;
  if (!file.endsWith('.md')) return `${target}: an anchor into a file that is not Markdown`;
  return markdown(file).anchors.has(decodeURIComponent(anchor))
    ? undefined
    : `${target}: no heading #${anchor} in ${file}`;
}

/** Files of the code, tests and scripts that may cite the documents. */
function codeFiles(dir: string): string[] {
  const abs = path.join(REPO_ROOT, dir);
  if (!fs.existsSync(abs)) return [];
  if (fs.statSync(abs).isFile()) return [dir];
  return fs
    .readdirSync(abs, { withFileTypes: true })
    .filter((e) => !['node_modules', 'dist', '__pycache__'].includes(e.name))
    .flatMap((e) =>
      e.isDirectory()
        ? codeFiles(`${dir}/${e.name}`)
        : /\.(ts|js|cjs|mjs|py|css|html|sh)$/.test(e.name)
          ? [`${dir}/${e.name}`]
          : [],
    );
}

// this directory's own tests hold broken examples on purpose
const CODE = ['src', 'migrations', 'test', 'bench', 'scripts', 'console', 'bin', 'clients/python', '.ci/run']
  .flatMap(codeFiles)
  .filter((f) => !f.startsWith('test/docs/'));

describe('links in the documents', () => {
  it.each([...docs.keys()])('%s: every relative link and anchor resolves', (file) => {
    const broken = markdown(file)
      .links.filter((l) => !/^[a-z][a-z0-9+.-]*:/i.test(l.target))
      .flatMap((l) => {
        const why = brokenLink(file, l.target);
        return why ? [`${file}:${l.line} ${why}`] : [];
      });
    expect(broken).toEqual([]);
  });

  it('finds the links, and would see a broken one', () => {
    expect(markdown('README.md').links.map((l) => l.target)).toContain('docs/README.md');
    expect(brokenLink('README.md', 'docs/store.md#incremental-behind-a-watermark')).toBeUndefined();
    expect(brokenLink('README.md', 'docs/store.md#no-such-heading')).toMatch(/no heading #no-such-heading/);
    expect(brokenLink('docs/store.md', 'missing-page.md')).toMatch(/no file docs\/missing-page\.md/);
  });
});

describe('the documents the code cites', () => {
  it('cites docs pages and anchors that exist', () => {
    expect(CODE.length).toBeGreaterThan(100);
    const broken: string[] = [];
    let cited = 0;
    for (const file of CODE) {
      const text = fs.readFileSync(path.join(REPO_ROOT, file), 'utf8');
      for (const m of text.matchAll(/\bdocs\/([a-z0-9-]+\.md)(#[a-z0-9_-]+)?/g)) {
        cited++;
        const why = brokenLink('README.md', `docs/${m[1]}${m[2] ?? ''}`);
        if (why) broken.push(`${file}: ${why}`);
      }
    }
    expect(cited).toBeGreaterThan(20);
    expect(broken).toEqual([]);
  });

  it('names only README sections that exist (README, "Section")', () => {
    const readme = markdown('README.md').anchors;
    const broken = CODE.flatMap((file) =>
      [...fs.readFileSync(path.join(REPO_ROOT, file), 'utf8').matchAll(/README(?:\.md)?,\s*\*?\s*"([^"]+)"/g)]
        .filter(
          (m) =>
            !readme.has(
              m[1]
                .toLowerCase()
                .replace(/[^\p{L}\p{N}_\- ]/gu, '')
                .replace(/ /g, '-'),
            ),
        )
        .map((m) => `${file}: README, "${m[1]}"`),
    );
    expect(broken).toEqual([]);
  });
});

describe('pages of docs/', () => {
  const pages = [...docs.keys()].filter((f) => f.startsWith('docs/'));

  it.each(pages)('%s starts with a contents list of its sections', (file) => {
    const text = fs.readFileSync(path.join(REPO_ROOT, file), 'utf8').replace(/^(```|~~~)[\s\S]*?^\1/gm, '');
    const sections = [...text.matchAll(/^## (.+)$/gm)].map((m) => m[1]);
    expect(sections[0]).toBe('Contents');
    const contents = text.slice(text.indexOf('## Contents'), text.indexOf(`## ${sections[1]}`));
    const listed = [...contents.matchAll(/^- \[[^\]]+\]\(#([^)]+)\)/gm)].map((m) => m[1]);
    const doc = markdown(file);
    expect(listed.filter((a) => !doc.anchors.has(a))).toEqual([]);
    expect(listed.length).toBe(sections.length - 1);
  });
});
