import type { Job, JobType, Queue } from 'bullmq';
import type IORedis from 'ioredis';
import { DEAD_LETTER_KINDS, DeadLetter, DeadLetterKind } from './dead-letter';

/**
 * Dead letters are jobs on DEAD_LETTER_QUEUE that no worker ever consumes, so they sit in BullMQ's
 * waiting list (where BullMQ 6 also keeps the jobs of a paused queue) until `dlq replay` or
 * `dlq purge` removes them. Delayed and prioritized are read too, in case a writer ever sets those
 * job options. The queue is the only store: nothing here caches.
 */
export const DEAD_LETTER_STATES: readonly JobType[] = ['waiting', 'delayed', 'prioritized'];

/** Entries read per Redis round trip while scanning. @defaultValue 1000 */
export const SCAN_PAGE_SIZE = 1_000;

/**
 * Entries a claim or removal script handles per call. Each call blocks Redis for its length (~0.3
 * ms at 50, ~1.5 ms at 250, ~6 ms at 1,000), and a live queue on the same Redis waits behind it: a
 * 100k replay beside one kept 0.52-0.70x of its throughput at 50 (three batches in flight), 0.47-0.68x
 * at 250, 0.40-0.54x at 1,000; 25 cost the replay more round trips than it gave back
 * (BENCHMARKS.md, "Dead letters").
 */
export const WRITE_PAGE_SIZE = 50;

/** How long a replay's claim on a dead letter lasts if the replay dies holding it. @defaultValue 10 min */
export const CLAIM_TTL_MS = 600_000;

/** A dead letter without its bulky parts (the event, the stack, the violations): what listings read. */
export type DeadLetterSummary = Omit<DeadLetter, 'event' | 'error'> & { error: { message: string; code?: string } };

/**
 * What a replay needs of a claimed entry: the event as the JSON bytes it is stored as (cut out of
 * the record inside Redis, see REPLAY_FIELD), its id and its replay count. Nothing is parsed or
 * encoded again on the way back to the events queue; an entry written without that layout (by an
 * older version) is parsed and its event encoded here.
 */
export interface ClaimedLetter {
  id: string;
  eventId: string | null;
  /** The event's JSON text, UTF-8. */
  eventJson: Buffer;
  replayCount: number;
}

/**
 * The writer's layout of a record (encodeDeadLetter): the event is its last field, so the record's
 * bytes end in `,"event":<event JSON>}`, and the entry's REPLAY_FIELD says `<event bytes>
 * <replay count> <event id>`. A claim cuts the event out of the record with one `string.sub` (no
 * JSON decoded in Redis or here), after checking that the bytes around the cut are that frame.
 */
const REPLAY_FIELD = 'pl:replay';
const EVENT_FRAME = ',"event":';

/** Lua: the event's length in `data` by the layout `r` (REPLAY_FIELD), or nil if the bytes do not frame it. */
const LUA_EVENT_LENGTH = `
local function eventLength(data, r)
  local n = r and tonumber(string.match(r, '^(%d+) '))
  if n and n + ${EVENT_FRAME.length + 1} <= #data and string.sub(data, -1) == '}' and string.sub(data, -(n + ${EVENT_FRAME.length + 1}), -(n + 2)) == '${EVENT_FRAME}' then return n end
end
`;

/** A record as the writer stores it: its bytes (the event last) and its REPLAY_FIELD ('' without an event). */
export function encodeDeadLetter(letter: DeadLetter): { bytes: Buffer; replayField: string } {
  const { event, ...rest } = letter;
  const head = JSON.stringify(rest);
  const eventJson = event === undefined ? undefined : JSON.stringify(event);
  const count = letter.replayCount;
  // anything unusual is stored as a plain record, which a replay parses
  if (eventJson === undefined || head === '{}' || !Number.isSafeInteger(count) || count < 0) return { bytes: Buffer.from(JSON.stringify(letter), 'utf8'), replayField: '' };
  const bytes = Buffer.from(`${head.slice(0, -1)}${EVENT_FRAME}${eventJson}}`, 'utf8');
  return { bytes, replayField: `${Buffer.byteLength(eventJson, 'utf8')} ${count} ${letter.eventId ?? ''}` };
}

/**
 * What listings and stats read of an entry, computed once when it is written (ADD_SUMMARIES_SCRIPT)
 * and kept in its job hash beside BullMQ's fields: the summary (the record without the event, the
 * stack and the violations) and the kind, type and lastFailedAt the stats count by. Nothing
 * changes a dead letter's data after it is written, so these never go stale; an entry without them
 * (written by an older version, or by a writer that died between the two steps) is decoded as it
 * is read, by the same functions.
 */
const SUMMARY_FIELD = 'pl:summary';
const KIND_FIELD = 'pl:kind';
const TYPE_FIELD = 'pl:type';
const AT_FIELD = 'pl:at';

/** Lua shared by the scripts below: one definition of an entry's summary and of what stats count. */
const LUA_SUMMARY = `
local function decoded(data)
  local ok, d = pcall(cjson.decode, data or '{}')
  if ok and type(d) == 'table' then return d end
  return {}
end
-- kind (the record's, else the job name), type ('' = none), lastFailedAt ('' = none)
local function statsOf(d, name)
  local kind = type(d['kind']) == 'string' and d['kind'] or name
  local t = type(d['type']) == 'string' and d['type'] or ''
  local at = type(d['lastFailedAt']) == 'string' and d['lastFailedAt'] or ''
  return kind, t, at
end
local function summaryOf(d)
  d['event'] = nil
  if type(d['error']) == 'table' then d['error'] = { message = d['error']['message'], code = d['error']['code'] } end
  return cjson.encode(d)
end
`;

/**
 * Stores the summary fields of entries just written, computed from the stored data, and their
 * REPLAY_FIELD: ARGV holds (id, the record's byte length, REPLAY_FIELD) per entry, and the field is
 * stored only if the stored record is the one described (the same length, the event framed where
 * it says). Entries that have them already (a redelivered dead letter, whose add BullMQ ignored)
 * keep theirs, entries that do not exist are skipped.
 */
const ADD_SUMMARIES_SCRIPT = `${LUA_SUMMARY}${LUA_EVENT_LENGTH}
for i = 1, #ARGV, 3 do
  local key = KEYS[1] .. ARGV[i]
  if redis.call('EXISTS', key) == 1 and redis.call('HEXISTS', key, '${AT_FIELD}') == 0 then
    local v = redis.call('HMGET', key, 'name', 'data')
    local d = decoded(v[2])
    local kind, t, at = statsOf(d, v[1] or '')
    redis.call('HSET', key, '${SUMMARY_FIELD}', summaryOf(d), '${KIND_FIELD}', kind, '${TYPE_FIELD}', t, '${AT_FIELD}', at)
    local r = ARGV[i + 2]
    if v[2] and tostring(#v[2]) == ARGV[i + 1] and eventLength(v[2], r) then redis.call('HSET', key, '${REPLAY_FIELD}', r) end
  end
end
return 0`;

/**
 * Reads the entries ARGV[2..] of the queue whose job keys start with KEYS[1]: name, timestamp and
 * data. In 'summary' mode the data is the stored summary (or, for an entry without one, the
 * record decoded and re-encoded without the event, the stack and the violations), so a listing
 * never carries payloads over the wire it does not show.
 */
const READ_SCRIPT = `${LUA_SUMMARY}
local out = {}
local summary = ARGV[1] == 'summary'
for i = 2, #ARGV do
  local key = KEYS[1] .. ARGV[i]
  local v = redis.call('HMGET', key, 'name', 'timestamp', summary and '${SUMMARY_FIELD}' or 'data')
  if v[1] then
    local data = v[3]
    if summary and not data then data = summaryOf(decoded(redis.call('HGET', key, 'data'))) end
    out[#out + 1] = ARGV[i]
    out[#out + 1] = v[1]
    out[#out + 1] = v[2] or '0'
    out[#out + 1] = data or '{}'
  end
end
return out`;

/**
 * Counts ARGV[1..] inside Redis: returns [n, oldestId, oldestAt, kind1, count1, ..., '|', type1,
 * count1, ...]. Only numbers and names cross the wire: a stats run over 100k entries sends a few
 * hundred bytes per page, and reads each entry's stored kind, type and time (no JSON decoded).
 * `at` is lastFailedAt (ISO-8601, so it orders as text), else the job's time.
 */
const STATS_SCRIPT = `${LUA_SUMMARY}
local kinds, types = {}, {}
local n, oldestId, oldestAt = 0, '', ''
for i = 1, #ARGV do
  local key = KEYS[1] .. ARGV[i]
  local v = redis.call('HMGET', key, 'name', 'timestamp', '${KIND_FIELD}', '${TYPE_FIELD}', '${AT_FIELD}')
  if v[1] then
    n = n + 1
    local kind, t, at = v[3], v[4], v[5]
    if not at then kind, t, at = statsOf(decoded(redis.call('HGET', key, 'data')), v[1]) end
    kinds[kind] = (kinds[kind] or 0) + 1
    types[t] = (types[t] or 0) + 1
    if at == '' then at = '#' .. (v[2] or '0') end
    if oldestId == '' or at < oldestAt then oldestId, oldestAt = ARGV[i], at end
  end
end
local out = { n, oldestId, oldestAt }
for k, c in pairs(kinds) do out[#out + 1] = k; out[#out + 1] = c end
out[#out + 1] = '|'
for k, c in pairs(types) do out[#out + 1] = k; out[#out + 1] = c end
return out`;

/**
 * Depth for /metrics: counts entries by job name (the writer names each job after its kind) and
 * finds the smallest job timestamp (when it was dead-lettered); returns [n, oldestMs, name1,
 * count1, ...]. With ARGV[1] = 'range', the entries are the wait list KEYS[2] from index ARGV[2] to
 * ARGV[3] (read inside Redis: no id crosses the wire); with 'ids', ARGV[2..]. Reads two short hash
 * fields an entry and decodes no JSON.
 */
const DEPTH_SCRIPT = `
local ids
if ARGV[1] == 'range' then
  ids = redis.call('LRANGE', KEYS[2], ARGV[2], ARGV[3])
else
  ids = {}
  for i = 2, #ARGV do ids[#ids + 1] = ARGV[i] end
end
local kinds = {}
local n, oldest = 0, -1
for i = 1, #ids do
  local v = redis.call('HMGET', KEYS[1] .. ids[i], 'name', 'timestamp')
  if v[1] then
    n = n + 1
    kinds[v[1]] = (kinds[v[1]] or 0) + 1
    local ts = tonumber(v[2] or '0') or 0
    if oldest < 0 or ts < oldest then oldest = ts end
  end
end
local out = { n, tostring(oldest), #ids }
for k, c in pairs(kinds) do out[#out + 1] = k; out[#out + 1] = c end
return out`;

/**
 * A replay's claim on an entry is a field of the entry's own job hash, `<expiry ms>:<token>`: no
 * key of its own to create, expire and delete, and it goes with the entry.
 */
const CLAIM_FIELD = 'pl:claim';

/**
 * Claims ARGV[3..] for token ARGV[1] for ARGV[2] ms and reads the entries claimed (existing, and
 * unclaimed or with a claim past its expiry): id, REPLAY_FIELD and the event's bytes, or, for an
 * entry without that layout, id, '' and the whole record. One round trip; Redis's clock decides
 * expiry, so replays on hosts with skewed clocks agree.
 */
const CLAIM_SCRIPT = `${LUA_EVENT_LENGTH}
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local claim = tostring(now + tonumber(ARGV[2])) .. ':' .. ARGV[1]
local out = {}
for i = 3, #ARGV do
  local id = ARGV[i]
  local key = KEYS[1] .. id
  local v = redis.call('HMGET', key, 'name', 'data', '${CLAIM_FIELD}', '${REPLAY_FIELD}')
  if v[1] then
    local held = v[3]
    if held then
      local expiry = tonumber(string.match(held, '^(%d+):'))
      if expiry and expiry <= now then held = nil end
    end
    if not held then
      redis.call('HSET', key, '${CLAIM_FIELD}', claim)
      local data = v[2] or '{}'
      local n = eventLength(data, v[4])
      out[#out + 1] = id
      if n then
        out[#out + 1] = v[4]
        out[#out + 1] = string.sub(data, -(n + 1), -2)
      else
        out[#out + 1] = ''
        out[#out + 1] = data
      end
    end
  end
end
return out`;

/**
 * Removes ARGV[1..] (KEYS: job key prefix, wait, delayed, prioritized); absent entries are skipped.
 * The wait list is searched from its tail, where the oldest entries are and a replay takes them
 * from: BullMQ's own removal scans from the head, i.e. the whole list per removal, which made a
 * 100k replay quadratic and blocked Redis ~1.7 ms each. Two calls an entry: one DEL of the hash
 * and its logs (which says whether it existed), and the list. A replay removes only entries whose
 * event it has just sent, so it needs no check of its claim here: if the claim expired and another
 * replay took the entry over meanwhile, that one sends the event again (a no-op for the store) and
 * finds the entry gone. Each redis.call costs ~1 us over the command itself: the claim check this
 * script made before (an HGET) was a tenth of a 100k replay's Redis time.
 */
const REMOVE_SCRIPT = `
local removed = 0
for i = 1, #ARGV do
  local id = ARGV[i]
  local key = KEYS[1] .. id
  if redis.call('DEL', key, key .. ':logs') > 0 then
    if redis.call('LREM', KEYS[2], -1, id) == 0 then
      redis.call('ZREM', KEYS[3], id)
      redis.call('ZREM', KEYS[4], id)
    end
    removed = removed + 1
  end
end
return removed`;

/**
 * Reads and removes dead letters with a few Lua scripts, a page of ids per round trip. A scan
 * first takes a snapshot of the ids (one LRANGE: ~40 bytes an entry), so entries removed or added
 * meanwhile never shift what a page holds: none is seen twice, and removed ones are skipped.
 */
export class DeadLetterRepository {
  constructor(
    private readonly queue: Queue,
    private readonly pageSize = SCAN_PAGE_SIZE,
    private readonly writePageSize = WRITE_PAGE_SIZE,
  ) {}

  /** The queue's own ioredis client (BullMQ's type for it leaves out `eval`). */
  private async redis(): Promise<IORedis> {
    return (await this.queue.backend.client) as unknown as IORedis;
  }

  /** Every id, oldest first (the wait list's tail first, then delayed and prioritized entries). */
  async ids(): Promise<string[]> {
    const client = await this.redis();
    const [waiting, delayed, prioritized] = await Promise.all([
      client.lrange(this.queue.keys.wait, 0, -1),
      client.zrange(this.queue.keys.delayed, 0, -1),
      client.zrange(this.queue.keys.prioritized, 0, -1),
    ]);
    waiting.reverse();
    const seen = new Set(waiting);
    for (const id of [...delayed, ...prioritized]) if (!seen.has(id)) waiting.push(id), seen.add(id);
    return waiting;
  }

  private async read(mode: 'summary' | 'full', ids: string[]): Promise<Array<[string, string, string, string]>> {
    const client = await this.redis();
    const rows: Array<[string, string, string, string]> = [];
    // a page per call: a script's arguments are spread into one call, whose size is bounded
    for (let p = 0; p < ids.length; p += this.pageSize) {
      const flat = (await client.eval(READ_SCRIPT, 1, this.queue.toKey(''), mode, ...ids.slice(p, p + this.pageSize))) as string[];
      for (let i = 0; i < flat.length; i += 4) rows.push([flat[i], flat[i + 1], flat[i + 2], flat[i + 3]]);
    }
    return rows;
  }

  /**
   * Stores the summary fields of entries just written (see SUMMARY_FIELD) and, for those stored as
   * encodeDeadLetter laid them out, their REPLAY_FIELD.
   */
  async addSummaries(letters: ReadonlyArray<{ id: string; bytes?: number; replayField?: string }>): Promise<void> {
    if (letters.length === 0) return;
    const client = await this.redis();
    const args = letters.map((l) => [l.id, String(l.bytes ?? ''), l.replayField ?? '']);
    for (let p = 0; p < args.length; p += this.pageSize) await client.eval(ADD_SUMMARIES_SCRIPT, 1, this.queue.toKey(''), ...args.slice(p, p + this.pageSize).flat());
  }

  /** Summaries of `ids` that still exist, in that order. */
  async summaries(ids: string[]): Promise<DeadLetterSummary[]> {
    return (await this.read('summary', ids)).map(([id, name, ts, data]) => toSummary(fromRaw(id, name, ts, data)));
  }

  /** Every entry's summary, oldest first, a page at a time (see the class comment). */
  async *scan(): AsyncGenerator<DeadLetterSummary[]> {
    yield* this.scanIds(await this.ids());
  }

  /** The summaries of a snapshot of ids, a page at a time; each page may be empty (all removed meanwhile). */
  async *scanIds(ids: string[]): AsyncGenerator<DeadLetterSummary[]> {
    for (let i = 0; i < ids.length; i += this.pageSize) {
      yield await this.summaries(ids.slice(i, i + this.pageSize));
    }
  }

  async get(id: string): Promise<DeadLetter | undefined> {
    return (await this.getMany([id]))[0];
  }

  /** The entries of `ids` in that order, events included; `undefined` where one no longer exists. */
  async getMany(ids: string[]): Promise<Array<DeadLetter | undefined>> {
    const found = new Map((await this.read('full', ids)).map(([id, name, ts, data]) => [id, fromRaw(id, name, ts, data)]));
    return ids.map((id) => found.get(id));
  }

  /**
   * Claims the entries for `token` (for CLAIM_TTL_MS): a second replay running at the same time
   * skips them, so no event is sent twice and no dead letter is written twice. Returns the entries
   * claimed (existing and not claimed by someone else), what a replay needs of each, in the order
   * of `ids`.
   */
  async claim(ids: string[], token: string, ttlMs = CLAIM_TTL_MS): Promise<ClaimedLetter[]> {
    const client = await this.redis();
    const claimed: ClaimedLetter[] = [];
    for (let p = 0; p < ids.length; p += this.writePageSize) {
      // as Buffers: an event's bytes go back to Redis as they came, never decoded to a string
      const flat = (await client.callBuffer('EVAL', CLAIM_SCRIPT, 1, this.queue.toKey(''), token, String(ttlMs), ...ids.slice(p, p + this.writePageSize))) as Buffer[];
      for (let i = 0; i < flat.length; i += 3) claimed.push(claimedLetter(flat[i].toString('utf8'), flat[i + 1], flat[i + 2]));
    }
    return claimed;
  }

  /** Removes the given entries (absent ones are ignored). Returns how many went. */
  async remove(ids: string[]): Promise<number> {
    const client = await this.redis();
    const k = this.queue.keys;
    let removed = 0;
    for (let i = 0; i < ids.length; i += this.writePageSize) {
      removed += (await client.eval(REMOVE_SCRIPT, 4, this.queue.toKey(''), k.wait, k.delayed, k.prioritized, ...ids.slice(i, i + this.writePageSize))) as number;
    }
    return removed;
  }

  /**
   * Counts by kind and by type (type '' = none) and the entry dead-lettered longest ago, computed
   * inside Redis a page at a time. `oldestAt` is an ISO time, or `#<job timestamp ms>` for an entry
   * without one.
   */
  async countAll(): Promise<{ total: number; byKind: Map<string, number>; byType: Map<string, number>; oldest: { id: string; at: string } | null }> {
    const client = await this.redis();
    const ids = await this.ids();
    const byKind = new Map<string, number>();
    const byType = new Map<string, number>();
    let total = 0;
    let oldest: { id: string; at: string } | null = null;
    for (let i = 0; i < ids.length; i += this.pageSize) {
      const out = (await client.eval(STATS_SCRIPT, 1, this.queue.toKey(''), ...ids.slice(i, i + this.pageSize))) as Array<string | number>;
      total += Number(out[0]);
      if (out[1] !== '' && (!oldest || atMs(String(out[2])) < atMs(oldest.at))) oldest = { id: String(out[1]), at: String(out[2]) };
      let target = byKind;
      for (let j = 3; j < out.length; j += 2) {
        if (out[j] === '|') {
          target = byType;
          j -= 1;
          continue;
        }
        target.set(String(out[j]), (target.get(String(out[j])) ?? 0) + Number(out[j + 1]));
      }
    }
    return { total, byKind, byType, oldest };
  }

  /**
   * Dead letters by kind and the time (ms) the oldest was dead-lettered, for the worker's /metrics:
   * reads each entry's job name and time only (no event, no JSON), a page of the wait list per
   * round trip, paged from its tail by negative index inside Redis, so entries added meanwhile (at
   * the head) shift nothing; during a replay or purge the figures are approximate.
   */
  async depth(): Promise<{ total: number; byKind: Map<string, number>; oldestAtMs: number | undefined }> {
    const client = await this.redis();
    const prefix = this.queue.toKey('');
    const byKind = new Map<string, number>();
    let total = 0;
    let oldestAtMs: number | undefined;
    const add = (out: Array<string | number>): number => {
      const n = Number(out[0]);
      total += n;
      if (n > 0 && (oldestAtMs === undefined || Number(out[1]) < oldestAtMs)) oldestAtMs = Number(out[1]);
      for (let j = 3; j < out.length; j += 2) byKind.set(String(out[j]), (byKind.get(String(out[j])) ?? 0) + Number(out[j + 1]));
      return Number(out[2]);
    };
    for (let end = -1; ; end -= this.pageSize) {
      const read = add((await client.eval(DEPTH_SCRIPT, 2, prefix, this.queue.keys.wait, 'range', String(end - this.pageSize + 1), String(end))) as Array<string | number>);
      if (read < this.pageSize) break;
    }
    const [delayed, prioritized] = await Promise.all([client.zrange(this.queue.keys.delayed, 0, -1), client.zrange(this.queue.keys.prioritized, 0, -1)]);
    const others = [...new Set([...delayed, ...prioritized])];
    for (let i = 0; i < others.length; i += this.pageSize) {
      add((await client.eval(DEPTH_SCRIPT, 2, prefix, this.queue.keys.wait, 'ids', ...others.slice(i, i + this.pageSize))) as Array<string | number>);
    }
    return { total, byKind, oldestAtMs };
  }

  /** How many entries the queue holds, without reading them. */
  async count(): Promise<number> {
    const counts = await this.queue.getJobCounts(...DEAD_LETTER_STATES);
    return Object.values(counts).reduce((a, b) => a + b, 0);
  }
}

/** Milliseconds of an `oldestAt` from the stats script. */
export function atMs(at: string): number {
  if (at.startsWith('#')) return Number(at.slice(1));
  const t = Date.parse(at);
  return Number.isNaN(t) ? 0 : t;
}

function parseData(raw: string): unknown {
  try {
    return JSON.parse(raw);
  } catch {
    return {};
  }
}

function fromRaw(id: string, name: string, timestamp: string, data: string): DeadLetter {
  return toDeadLetterFrom(id, name, Number(timestamp), parseData(data));
}

/** The record without its event, stack and violations. Field by field: a rest-spread costs ~5 us an entry, which a 100k listing feels. */
export function toSummary(dl: DeadLetter): DeadLetterSummary {
  const { error } = dl;
  return {
    id: dl.id,
    kind: dl.kind,
    eventId: dl.eventId,
    type: dl.type,
    planId: dl.planId,
    sessionId: dl.sessionId,
    error: error.code !== undefined && error.code !== null ? { message: error.message, code: error.code } : { message: error.message },
    attempts: dl.attempts,
    firstFailedAt: dl.firstFailedAt,
    lastFailedAt: dl.lastFailedAt,
    source: dl.source,
    workerVersion: dl.workerVersion,
    replayCount: dl.replayCount,
  };
}

/** A claim's answer for one entry: REPLAY_FIELD and the event's bytes, or '' and the whole record. */
function claimedLetter(id: string, replayField: Buffer, payload: Buffer): ClaimedLetter {
  if (replayField.length > 0) {
    // the event's bytes, checked by the claim; the field is `<event bytes> <replay count> <event id>`
    const text = replayField.toString('utf8');
    const a = text.indexOf(' ');
    const b = text.indexOf(' ', a + 1);
    const count = b > a ? Number(text.slice(a + 1, b)) : NaN;
    const eventId = b > a ? text.slice(b + 1) : '';
    return { id, eventId: eventId === '' ? null : eventId, eventJson: payload, replayCount: Number.isSafeInteger(count) ? count : 0 };
  }
  const record = asRecord(parseData(payload.toString('utf8')));
  // JSON.stringify(undefined) is undefined: an entry without an event replays as null, as an array element would encode it
  return { id, eventId: str(record.eventId), eventJson: Buffer.from(JSON.stringify(record.event) ?? 'null', 'utf8'), replayCount: replayCountOf(record) };
}

function str(value: unknown): string | null {
  return typeof value === 'string' ? value : null;
}

/** A job's parsed data as a record whose every field is checked where it is read. */
function asRecord(rawData: unknown): Partial<DeadLetter> {
  return (rawData && typeof rawData === 'object' ? rawData : {}) as Partial<DeadLetter>;
}

function replayCountOf(data: Partial<DeadLetter>): number {
  return typeof data.replayCount === 'number' ? data.replayCount : 0;
}

/**
 * The job's data as a DeadLetter. Writers store a complete record; this only fills gaps (an entry
 * written by hand or by an older version) from the job itself so listing never crashes on one.
 */
export function toDeadLetter(job: Job): DeadLetter {
  return toDeadLetterFrom(String(job.id), job.name, job.timestamp, job.data);
}

export function toDeadLetterFrom(id: string, name: string, timestamp: number, rawData: unknown): DeadLetter {
  const data = asRecord(rawData);
  // only for a record without times (an ISO string per entry is a cost a 100k listing feels)
  const addedAt = (): string => new Date(timestamp || 0).toISOString();
  const kind = (DEAD_LETTER_KINDS as readonly string[]).includes(String(data.kind ?? name)) ? ((data.kind ?? name) as DeadLetterKind) : 'unprocessable';
  const error = data.error && typeof data.error === 'object' ? data.error : { message: '(no error recorded)' };
  // field by field, fields of no DeadLetter left out: a spread of the record costs ~4 us an entry
  return {
    // the job id is what removal uses; writers set both to the same value
    id,
    kind,
    event: data.event,
    eventId: str(data.eventId),
    type: str(data.type),
    planId: str(data.planId),
    sessionId: str(data.sessionId),
    error: { ...error, message: str(error.message) ?? '(no message)' },
    attempts: typeof data.attempts === 'number' ? data.attempts : 0,
    firstFailedAt: str(data.firstFailedAt) ?? addedAt(),
    lastFailedAt: str(data.lastFailedAt) ?? addedAt(),
    source: data.source && typeof data.source === 'object' ? data.source : { queue: '?', jobId: '?' },
    workerVersion: str(data.workerVersion) ?? '?',
    replayCount: replayCountOf(data),
  };
}
