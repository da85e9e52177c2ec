/**
 * The dead-letter scripts are .lua files read at first use: every one must load with its includes
 * expanded, name the hash fields the TypeScript codec names, survive a Redis that forgot it
 * (NOSCRIPT: restart, SCRIPT FLUSH), and load from what `npm pack` ships, the build (`dist/`),
 * not only from the sources ts-jest runs.
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as codec from '../../src/dead-letters/dead-letter-codec';
import { DEAD_LETTER_SCRIPTS } from '../../src/dead-letters/dead-letter-scripts';
import { DeadLetterService } from '../../src/dead-letters/dead-letter.service';
import { LUA_DIR, readLua } from '../../src/dead-letters/lua-script';
import { createLogger } from '../../src/shared/logger';
import { RedisProcess } from '../publisher/support/redis-process';
import { QueueFixture, REDIS_URL, letter, uniquePrefix } from './dead-letter.fixtures';

const ROOT = path.join(__dirname, '..', '..');
const logger = createLogger({ level: 'silent' });

describe('dead-letter Lua scripts', () => {
  it('each loads with its includes expanded once, and documents its KEYS and ARGV', () => {
    expect(DEAD_LETTER_SCRIPTS.map((s) => s.file).sort()).toEqual([
      'add-summaries',
      'claim-entries',
      'count-depth',
      'count-stats',
      'read-entries',
      'release-claims',
      'remove-entries',
    ]);
    for (const script of DEAD_LETTER_SCRIPTS) {
      const source = script.source;
      expect({ file: script.file, include: /@include/.test(source) }).toEqual({ file: script.file, include: false });
      expect(source).toMatch(/Input:\n\s+KEYS\[1\]/);
      expect(source).toMatch(/Output:/);
      for (const name of ['SUMMARY_FIELD', 'eventLength', 'summaryOf'])
        expect((source.match(new RegExp(`local (function )?${name}\\b`, 'g')) ?? []).length).toBeLessThanOrEqual(1);
      expect(script.sha).toMatch(/^[0-9a-f]{40}$/);
    }
  });

  it('name the same hash fields and event frame as the codec', () => {
    const fields = fs.readFileSync(path.join(LUA_DIR, 'includes', 'fields.lua'), 'utf8');
    const lua = Object.fromEntries([...fields.matchAll(/^local (\w+) = '([^']*)'$/gm)].map((m) => [m[1], m[2]]));
    const ts = Object.fromEntries(
      ['SUMMARY_FIELD', 'KIND_FIELD', 'TYPE_FIELD', 'AT_FIELD', 'REPLAY_FIELD', 'CLAIM_FIELD', 'EVENT_FRAME'].map(
        (k) => [k, (codec as Record<string, unknown>)[k]],
      ),
    );
    expect(lua).toEqual(ts);
  });

  it('a missing file is named, with where the build puts it', () => {
    expect(() => readLua('no-such-script')).toThrow(
      /no-such-script\.lua cannot be read \(ENOENT\).*npm run build copies it into dist/,
    );
  });

  it('a Redis that lost its scripts (SCRIPT FLUSH) gets them again on the next call', async () => {
    const server = await RedisProcess.create();
    await server.start();
    const q = new QueueFixture(undefined, server.url);
    try {
      const dlq = new DeadLetterService({ deadLetters: q.deadLetters, events: q.events, logger });
      const [a] = await q.write(letter({ kind: 'invalid' }), letter());
      expect((await dlq.stats()).total).toBe(2);
      await q.redis.script('FLUSH');
      expect(await q.redis.script('EXISTS', ...DEAD_LETTER_SCRIPTS.map((s) => s.sha))).toEqual(
        DEAD_LETTER_SCRIPTS.map(() => 0),
      );
      expect(await dlq.stats()).toMatchObject({ total: 2, byKind: { invalid: 1, 'retries-exhausted': 1 } });
      expect((await dlq.show(a.id)).event).toEqual(a.event);
      const replayed = await dlq.replay({ filter: {} });
      expect(replayed).toMatchObject({ replayed: 2, kept: [] });
    } finally {
      await q.close();
      await server.destroy();
    }
  });
});

describe('dead-letter Lua scripts in the package', () => {
  let dir: string;
  beforeAll(() => {
    // the package as `npm pack` sees it: what package.json ships, built by its own prepare script
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'plan-ledger-pack-'));
    for (const entry of [
      'src',
      'migrations',
      'bin',
      'console',
      'schemas',
      'scripts',
      'package.json',
      'tsconfig.json',
      'tsconfig.build.json',
      'ormconfig.ts',
    ]) {
      fs.cpSync(path.join(ROOT, entry), path.join(dir, entry), { recursive: true });
    }
    fs.symlinkSync(path.join(ROOT, 'node_modules'), path.join(dir, 'node_modules'));
  });
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('npm pack ships every .lua under dist/, and the built module runs them against Redis', () => {
    const packed = JSON.parse(
      execFileSync('npm', ['pack', '--dry-run', '--json'], {
        cwd: dir,
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'pipe'],
      }),
    ) as Array<{ files: Array<{ path: string }> }>;
    const shipped = packed[0].files
      .map((f) => f.path)
      .filter((p) => p.endsWith('.lua'))
      .sort();
    const sources = fs
      .readdirSync(LUA_DIR, { recursive: true, encoding: 'utf8' })
      .filter((p) => p.endsWith('.lua'))
      .map((p) => `dist/src/dead-letters/lua/${p.split(path.sep).join('/')}`)
      .sort();
    expect(shipped).toEqual(sources);
    expect(packed[0].files.some((f) => f.path.startsWith('src/'))).toBe(false);

    // the build alone (no sources, no ts-jest): write, list, count and replay with its scripts
    fs.rmSync(path.join(dir, 'src'), { recursive: true });
    const built = path.join(dir, 'dist', 'src', 'dead-letters');
    const script = `
      const IORedis = require('ioredis');
      const { Queue } = require('bullmq');
      const dl = require(${JSON.stringify(built)});
      const { buildDeadLetter, DeadLetterWriter } = require(${JSON.stringify(path.join(built, 'dead-letter-writer.js'))});
      const { LUA_DIR } = require(${JSON.stringify(path.join(built, 'lua-script.js'))});
      (async () => {
        const redis = new IORedis(${JSON.stringify(REDIS_URL)}, { maxRetriesPerRequest: null });
        const prefix = ${JSON.stringify(uniquePrefix())};
        const writer = new DeadLetterWriter(redis, prefix);
        const letter = (i) => buildDeadLetter('invalid', { eventId: 'e' + i, type: 'step.completed' }, { message: 'bad' }, { queue: 'plan-events', prefix, jobId: 'j' + i, index: 0, attempts: 1, firstFailedAt: new Date(), lastFailedAt: new Date(), workerVersion: 'x', replayCount: 0 });
        await writer.write([letter(1), letter(2)]);
        const deadLetters = new Queue('plan-events-dead', { connection: redis, prefix });
        const events = new Queue('plan-events', { connection: redis, prefix });
        const service = new dl.DeadLetterService({ deadLetters, events, logger: { info() {}, warn() {}, debug() {}, error() {} } });
        const out = { luaDir: LUA_DIR, stats: await service.stats(), list: (await service.listSummaries({})).total, replay: (await service.replay({ filter: {} })).replayed, left: await new dl.DeadLetterRepository(deadLetters).count() };
        for (const q of [deadLetters, events]) { await q.obliterate({ force: true }); await q.close(); }
        await writer.close();
        await redis.quit();
        process.stdout.write(JSON.stringify(out));
      })().catch((err) => { console.error(err); process.exit(1); });`;
    const out = JSON.parse(execFileSync(process.execPath, ['-e', script], { cwd: dir, encoding: 'utf8' }));
    expect(out).toMatchObject({
      luaDir: path.join(built, 'lua'),
      stats: { total: 2, byKind: { invalid: 2 } },
      list: 2,
      replay: 2,
      left: 0,
    });
  });
});
