import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import pino from 'pino';
import { HeldSpanJournal } from '../../src/otlp/held-span-journal';
import { decodeTraces, encodeRequest } from '../../src/otlp/otlp-codec';
import { genAiRun, otlpJsonRequest, protobufShaped } from './otlp-fixtures';

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

  /** A protobuf ExportTraceServiceRequest of these spans, and the spans as the server decodes them. */
  const protobufRequest = (spans: ReturnType<typeof genAiRun>) => {
    const body = Buffer.from(encodeRequest(protobufShaped(otlpJsonRequest(spans))));
    return { body, spans: decodeTraces('protobuf', body) };
  };

  it('gives back the spans of a protobuf request journaled as it came, beside spans journaled one by one', async () => {
    const first = new HeldSpanJournal(dir, silent);
    first.recover();
    const [a, b, c] = [protobufRequest(genAiRun(trace(5))), protobufRequest(genAiRun(trace(6))), genAiRun(trace(7))];
    first.appendRequest(a.spans, a.body);
    first.appendRequest(b.spans, b.body);
    first.append(c);
    first.done([trace(6)]);
    await first.synced();
    expect(
      fs
        .readFileSync(path.join(dir, files()[0]), 'utf8')
        .split('\n')
        .map((l) => l.slice(0, 2)),
    ).toEqual(['P\t', 'P\t', 'S\t', 'D\t', '']);
    const second = new HeldSpanJournal(dir, silent);
    const recovered = second.recover();
    expect(recovered).toEqual([...a.spans, ...c]);
    // times, ids and attributes as the request said
    expect(recovered.slice(0, a.spans.length).map((s) => [s.spanId, s.endNs, s.attributes])).toEqual(
      genAiRun(trace(5)).map((s) => [s.spanId, s.endNs, s.attributes]),
    );
  });

  it('skips a torn protobuf line and keeps what came before it', async () => {
    const journal = new HeldSpanJournal(dir, silent);
    journal.recover();
    const a = protobufRequest(genAiRun(trace(8)));
    journal.appendRequest(a.spans, a.body);
    await journal.synced();
    const torn = protobufRequest(genAiRun(trace(9))).body.toString('base64');
    fs.appendFileSync(path.join(dir, files()[0]), `P\t${torn.slice(0, torn.length / 2)}`);
    expect(new HeldSpanJournal(dir, silent).recover()).toEqual(a.spans);
  });
});
