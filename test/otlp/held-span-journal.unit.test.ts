import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import pino from 'pino';
import { HeldSpanJournal } from '../../src/otlp/held-span-journal';
import { genAiRun } from './otlp-fixtures';

const silent = pino({ level: 'silent' });
const trace = (n: number) => `${n}`.padStart(32, 'b');

describe('HeldSpanJournal (the spans POST /v1/traces holds, on disk)', () => {
  let dir: string;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'plan-ledger-held-'));
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));
  const files = () => fs.readdirSync(dir).sort();

  it('gives back, after a crash, the spans of every trace not marked done, times and attributes intact', async () => {
    const first = new HeldSpanJournal(dir, silent);
    expect(first.recover()).toEqual([]);
    const [a, b, c] = [genAiRun(trace(1)), genAiRun(trace(2)), genAiRun(trace(3))];
    first.append(a.slice(0, 2));
    first.append(b);
    first.append(a.slice(2));
    first.done([trace(2)]);
    first.append(c);
    await first.synced();
    // no close: the process died
    const second = new HeldSpanJournal(dir, silent);
    expect(second.recover()).toEqual([...a, ...c]);
  });

  it('removes a segment once every trace in it is done and that is on disk; keeps one that still holds a trace', async () => {
    const journal = new HeldSpanJournal(dir, silent, 1); // a new segment for every line
    journal.recover();
    journal.append(genAiRun(trace(1)));
    journal.append(genAiRun(trace(2)));
    await journal.synced();
    expect(files()).toHaveLength(2);
    journal.done([trace(1)]);
    await journal.synced();
    expect(files()).toEqual(['spans-000000000002.jsonl', 'spans-000000000003.jsonl']);
    journal.done([trace(2)]);
    await journal.close();
    expect(files()).toEqual([]);
  });

  it('skips a torn last line (a crash in the middle of a write) and keeps what came before it', async () => {
    const journal = new HeldSpanJournal(dir, silent);
    journal.recover();
    journal.append(genAiRun(trace(4)));
    await journal.synced();
    fs.appendFileSync(path.join(dir, files()[0]), 'S\t[{"traceId":"half');
    expect(new HeldSpanJournal(dir, silent).recover()).toEqual(genAiRun(trace(4)));
  });
});
