/**
 * The routes the console adds, over HTTP with Bearer keys and with its session cookie, against a
 * real `plan-ledger serve` on SQLite and Redis (no worker: queued jobs stay waiting).
 */
import { Queue } from 'bullmq';
import { buildDeadLetter, DeadLetterWriter } from '../../src/dead-letters/dead-letter-writer';
import { EVENT_BATCH_JOB, EVENTS_QUEUE } from '../../src/queue/queue-names';
import { recordStoredEvents } from '../../src/queue/stored-event-rate';
import { ApiStack, call, INGEST_KEY, READ_KEY, startApiStack } from '../http/http-harness';
import { openRedis } from '../worker/helpers/queue-harness';

const ADMIN_KEY = 'admin-key-for-console-api-tests-01';

describe('console routes', () => {
  let stack: ApiStack;
  beforeAll(async () => {
    stack = await startApiStack('sqlite', { worker: false, env: { HTTP_ADMIN_KEYS: ADMIN_KEY } });
  });
  afterAll(async () => stack?.close());

  it("GET /v1/health: waiting jobs and the oldest one's age, dead letters by kind, events stored per minute", async () => {
    const redis = openRedis();
    const events = new Queue(EVENTS_QUEUE, { connection: redis, prefix: stack.prefix });
    const writer = new DeadLetterWriter(redis, stack.prefix);
    try {
      await events.add(EVENT_BATCH_JOB, { v: 1, events: [] }, { timestamp: Date.now() - 90_000 });
      await events.add(EVENT_BATCH_JOB, { v: 1, events: [] });
      const at = new Date();
      await writer.write([
        buildDeadLetter(
          'invalid',
          { type: 'x' },
          { message: 'bad' },
          {
            queue: EVENTS_QUEUE,
            prefix: stack.prefix,
            jobId: 'j',
            index: 0,
            attempts: 1,
            firstFailedAt: at,
            lastFailedAt: at,
            workerVersion: 't',
            replayCount: 0,
          },
        ),
      ]);
      recordStoredEvents(redis, stack.prefix, 7);
      recordStoredEvents(redis, stack.prefix, 5);
      await new Promise((r) => setTimeout(r, 100));

      const health = await call(stack, 'GET', '/v1/health?minutes=3');
      expect(health.status).toBe(200);
      expect(health.json.queue).toMatchObject({ waiting: 2, active: 0 });
      // the job added with a time 90 s ago
      expect(health.json.queue.oldestWaitingAgeSeconds).toBeGreaterThanOrEqual(89);
      // one shard without QUEUE_SHARDS: its row is the whole queue
      expect(health.json.shards).toEqual([{ shard: '0', ...health.json.queue }]);
      expect(health.json.deadLetters).toMatchObject({ total: 1, byKind: { invalid: 1 } });
      expect(health.json.eventsPerMinute).toHaveLength(3);
      expect(health.json.eventsPerMinute[2].events + health.json.eventsPerMinute[1].events).toBe(12);
      expect((await call(stack, 'GET', '/v1/health?minutes=0')).status).toBe(400);
    } finally {
      await writer.close();
      await events.close();
      redis.disconnect();
    }
  });

  it('dead letters: read keys list and show, only admin keys replay or purge; a Bearer key needs no CSRF token', async () => {
    const list = await call(stack, 'GET', '/v1/dead-letters?kind=invalid');
    expect(list.status).toBe(200);
    expect(list.json.total).toBe(1);
    const id = list.json.deadLetters[0].id;
    expect(list.json.deadLetters[0]).not.toHaveProperty('event');
    expect((await call(stack, 'GET', `/v1/dead-letters/${id}`)).json.event).toEqual({ type: 'x' });
    expect((await call(stack, 'GET', '/v1/dead-letters/dl-nope')).status).toBe(404);
    expect((await call(stack, 'GET', '/v1/dead-letters?kind=weird')).status).toBe(400);
    expect((await call(stack, 'POST', `/v1/dead-letters/${id}/purge`, { key: READ_KEY })).status).toBe(403);
    expect((await call(stack, 'POST', `/v1/dead-letters/${id}/purge`, { key: INGEST_KEY })).status).toBe(403);
    const purged = await call(stack, 'POST', `/v1/dead-letters/${id}/purge`, { key: ADMIN_KEY });
    expect(purged).toMatchObject({ status: 200, json: { removed: 1 } });
    expect((await call(stack, 'GET', '/v1/dead-letters')).json.total).toBe(0);
  });

  it('sign-in: an ingest-only key cannot open the console; a session cookie reads, and its writes need the CSRF token', async () => {
    const post = (key: string) =>
      fetch(`${stack.server.url}/console/session`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ key }),
      });
    const ingest = await post(INGEST_KEY);
    expect(ingest.status).toBe(403);
    expect(ingest.headers.get('set-cookie')).toBeNull();
    const signedIn = await post(READ_KEY);
    expect(signedIn.status).toBe(200);
    const cookie = signedIn.headers.get('set-cookie')!;
    expect(cookie).toMatch(/^pl_console=[A-Za-z0-9_-]{43}; Path=\/; HttpOnly; SameSite=Strict; Max-Age=43200$/);
    const session = cookie.split(';')[0];
    const { csrf, scopes } = (await signedIn.json()) as { csrf: string; scopes: string[] };
    expect(scopes).toEqual(['read']);
    expect((await fetch(`${stack.server.url}/v1/plans`, { headers: { cookie: session } })).status).toBe(200);
    // sign-out without the token is refused; with it, the cookie no longer opens anything
    expect(
      (await fetch(`${stack.server.url}/console/session`, { method: 'DELETE', headers: { cookie: session } })).status,
    ).toBe(403);
    expect(
      (
        await fetch(`${stack.server.url}/console/session`, {
          method: 'DELETE',
          headers: { cookie: session, 'x-csrf-token': csrf },
        })
      ).status,
    ).toBe(200);
    expect((await fetch(`${stack.server.url}/v1/plans`, { headers: { cookie: session } })).status).toBe(401);
    expect(stack.logs()).not.toContain(READ_KEY);
  });

  it('the cookie is Secure behind a TLS proxy named in HTTP_TRUST_PROXY, and X-Forwarded-Proto from anyone else is ignored', async () => {
    const signIn = (url: string, headers: Record<string, string> = {}) =>
      fetch(`${url}/console/session`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body: JSON.stringify({ key: READ_KEY }),
      }).then((r) => r.headers.get('set-cookie') ?? '');
    // this server trusts no proxy: the header is anyone's word
    expect(await signIn(stack.server.url, { 'x-forwarded-proto': 'https' })).not.toMatch(/Secure/);
    const proxied = await startApiStack('sqlite', { worker: false, env: { HTTP_TRUST_PROXY: '127.0.0.1' } });
    try {
      expect(await signIn(proxied.server.url, { 'x-forwarded-proto': 'https' })).toMatch(
        /; HttpOnly; SameSite=Strict; Max-Age=43200; Secure$/,
      );
      expect(await signIn(proxied.server.url, { 'x-forwarded-proto': 'http' })).not.toMatch(/Secure/);
      expect(await signIn(proxied.server.url)).not.toMatch(/Secure/);
    } finally {
      await proxied.close();
    }
    const untrusted = await startApiStack('sqlite', { worker: false, env: { HTTP_TRUST_PROXY: '10.0.0.0/8' } });
    try {
      expect(await signIn(untrusted.server.url, { 'x-forwarded-proto': 'https' })).not.toMatch(/Secure/);
    } finally {
      await untrusted.close();
    }
  });

  it('GET /favicon.ico answers the console icon without a key (no 404 on a first visit)', async () => {
    const res = await fetch(`${stack.server.url}/favicon.ico`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('image/svg+xml');
    expect(await res.text()).toMatch(/^<svg /);
  });

  it('many open consoles cost the database one read per second: concurrent and repeated reads share one answer, 304 when unchanged; API clients read fresh', async () => {
    const consoles: string[] = [];
    for (let i = 0; i < 20; i++) {
      const res = await fetch(`${stack.server.url}/console/session`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ key: READ_KEY }),
      });
      consoles.push(res.headers.get('set-cookie')!.split(';')[0]);
    }
    const reads = async () => {
      const text = await (await fetch(`${stack.server.url}/metrics`)).text();
      const count = (result: string) =>
        Number(
          new RegExp(`^plan_ledger_http_console_reads_total\\{result="${result}"\\} (\\d+)`, 'm').exec(text)?.[1] ?? 0,
        );
      return { computed: count('computed'), shared: count('shared'), notModified: count('not_modified') };
    };
    const before = await reads();
    const path = '/v1/plans?limit=5&status=executing';
    // 20 consoles at once, 5 times within the sharing window: one computation
    const answers = await Promise.all(
      consoles.map((cookie) => fetch(`${stack.server.url}${path}`, { headers: { cookie } })),
    );
    expect(answers.map((a) => a.status)).toEqual(consoles.map(() => 200));
    const etags = new Set(answers.map((a) => a.headers.get('etag')));
    expect(etags.size).toBe(1);
    const [etag] = [...etags];
    expect(etag).toMatch(/^"[A-Za-z0-9_-]{27}"$/);
    const again = await Promise.all(
      consoles.map((cookie) => fetch(`${stack.server.url}${path}`, { headers: { cookie, 'if-none-match': etag! } })),
    );
    expect(again.map((a) => a.status)).toEqual(consoles.map(() => 304));
    expect(await again[0].text()).toBe('');
    const after = await reads();
    expect(after.computed - before.computed).toBe(1);
    expect(after.shared - before.shared).toBe(19);
    expect(after.notModified - before.notModified).toBe(20);

    // past the window, one more computation serves everyone again
    await new Promise((r) => setTimeout(r, 1_100));
    await Promise.all(consoles.map((cookie) => fetch(`${stack.server.url}${path}`, { headers: { cookie } })));
    expect((await reads()).computed - after.computed).toBe(1);

    // a purge ends the sharing at once: the next console read is computed afresh
    const computedBefore = (await reads()).computed;
    await fetch(`${stack.server.url}${path}`, { headers: { cookie: consoles[0] } });
    expect((await reads()).computed).toBe(computedBefore);
    const purge = await call(stack, 'POST', '/v1/dead-letters/purge', {
      key: ADMIN_KEY,
      body: { all: true, plan: 'none-such' },
    });
    expect(purge.status).toBe(200);
    await fetch(`${stack.server.url}${path}`, { headers: { cookie: consoles[0] } });
    expect((await reads()).computed).toBe(computedBefore + 1);

    // a Bearer client: an ETag and 304 too, but never another's answer
    const api = await call(stack, 'GET', path);
    expect(api.status).toBe(200);
    const bearer = await fetch(`${stack.server.url}${path}`, {
      headers: { authorization: `Bearer ${READ_KEY}`, 'if-none-match': etag! },
    });
    expect(bearer.status).toBe(304);
    expect((await reads()).computed).toBe(computedBefore + 1);
  });

  it('dead letters: newest first and offset paging; bulk replay and purge need the admin scope and an explicit selection', async () => {
    const redis = openRedis();
    const writer = new DeadLetterWriter(redis, stack.prefix);
    const at = new Date();
    const letters = Array.from({ length: 5 }, (_, i) =>
      buildDeadLetter(
        'invalid',
        { type: 'x', planId: 'bulk-plan', n: i },
        { message: 'bad' },
        {
          queue: EVENTS_QUEUE,
          prefix: stack.prefix,
          jobId: `bulk-${i}`,
          index: 0,
          attempts: 1,
          firstFailedAt: at,
          lastFailedAt: at,
          workerVersion: 't',
          replayCount: 0,
        },
      ),
    );
    try {
      await writer.write(letters);
    } finally {
      await writer.close();
      redis.disconnect();
    }
    const ids = (path: string) =>
      call(stack, 'GET', path).then((r) => (r.json.deadLetters as Array<{ id: string }>).map((d) => d.id));
    expect(await ids('/v1/dead-letters?plan=bulk-plan&order=newest&limit=2')).toEqual([letters[4].id, letters[3].id]);
    expect(await ids('/v1/dead-letters?plan=bulk-plan&order=newest&limit=2&offset=2')).toEqual([
      letters[2].id,
      letters[1].id,
    ]);
    expect(await ids('/v1/dead-letters?order=oldest&limit=1')).toEqual([letters[0].id]);
    const page = await call(stack, 'GET', '/v1/dead-letters?order=newest&limit=2&offset=4');
    expect(page.json).toMatchObject({ total: 5, order: 'newest', offset: 4, limit: 2 });
    expect((await call(stack, 'GET', '/v1/dead-letters?order=sideways')).json.error).toBe(
      'order: "sideways" is not one of oldest, newest',
    );
    expect((await call(stack, 'GET', '/v1/dead-letters?offset=-1')).status).toBe(400);

    const post = (path: string, body: unknown, key = ADMIN_KEY) => call(stack, 'POST', path, { key, body });
    expect((await post('/v1/dead-letters/purge', { all: true }, READ_KEY)).status).toBe(403);
    const empty = await post('/v1/dead-letters/purge', {});
    expect(empty.status).toBe(400);
    expect(empty.json.error).toMatch(/^send \{"ids": \[\.\.\.\]\} or \{"all": true\}/);
    expect((await post('/v1/dead-letters/purge', { ids: [] })).status).toBe(400);
    expect((await post('/v1/dead-letters/purge', { ids: ['dl-nope'] })).status).toBe(404);
    expect((await post('/v1/dead-letters/purge', { ids: [letters[0].id, letters[1].id] })).json).toEqual({
      removed: 2,
    });
    expect((await post('/v1/dead-letters/purge', { all: true, plan: 'bulk-plan' })).json).toEqual({ removed: 3 });
    expect((await call(stack, 'GET', '/v1/dead-letters')).json.total).toBe(0);
  });

  // last: it leaves this server refusing sign-ins from 127.0.0.1 for a minute
  it('sign-in is throttled: after 10 refused keys from one address, 429 with Retry-After, even for a right key', async () => {
    const post = (key: string) =>
      fetch(`${stack.server.url}/console/session`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ key }),
      });
    for (let i = 0; i < 10; i++) expect((await post(`wrong-key-${i}-000000000000000000`)).status).toBe(401);
    const refused = await post(READ_KEY);
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(((await refused.json()) as { error: string }).error).toMatch(
      /^too many refused sign-ins from this address: try again in \d+ s$/,
    );
    expect(refused.headers.get('set-cookie')).toBeNull();
  });
});
