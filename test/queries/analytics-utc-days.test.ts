import { randomBytes } from 'node:crypto';
import { parsePlanEvent, PlanEvent } from '../../src/contracts';
import { run } from '../../src/cli/main';
import { parseDatabaseUrl } from '../../src/config/database-url';
import { plansPerDay } from '../../src/queries/analytics.query';
import { openDataSource } from '../../src/store/data-source';
import { runMigrations } from '../../src/store/migrator';
import { PlanEventStore } from '../../src/store/plan-event-store';
import { runCli } from '../support/cli';
import { createMigratedDb, PG_ADMIN_URL } from '../support/databases';
import { PlanScript } from '../support/read-dataset';

/**
 * Issue 13 item 13: `analytics daily` groups plans by UTC day whatever the database session's
 * time zone. PostgreSQL sessions run in the database's `timezone` setting (or the one a URL's
 * `options=-c TimeZone=...` sets): here a database of our own whose default is Pacific/Kiritimati
 * (UTC+14) or America/Adak (UTC-10/-9), where a local-day grouping would move most of these plans
 * to another day. SQLite and MariaDB have no session zone for these columns and are the reference.
 */
const CREATED = [
  ['2026-03-01T09:30:00.000Z', 'completed'], // Kiritimati 23:30 the same day
  ['2026-03-01T10:30:00.000Z', 'failed'], //    Kiritimati 00:30 the next day
  ['2026-03-01T23:30:00.000Z', 'completed'], // Kiritimati the next day
  ['2026-03-02T00:00:00.000Z', 'cancelled'], // Adak 14:00 the day before
  ['2026-03-02T00:30:00.000Z', 'completed'], // Adak the day before
  ['2026-03-02T23:59:59.999Z', null], //        the last instant of a UTC day
  ['2026-03-03T09:59:59.999Z', 'completed'], // Adak the day before, Kiritimati 23:59 the same day
] as const;

function events(): PlanEvent[] {
  const steps = [{ stepId: 'only', index: 0, agentId: 'agent', task: 'work' }];
  return CREATED.flatMap(([at, status], i) => {
    const script = new PlanScript(`plan-tz-${i}`, 'sess-tz', at).created({ query: `plan ${i}`, steps });
    if (status) script.finalized({ status }, 0);
    return script.events.map((e) => {
      const r = parsePlanEvent(e);
      if (!r.ok) throw new Error(r.error.message);
      return r.event;
    });
  });
}

const COMMANDS = [
  ['analytics', 'daily'],
  ['analytics', 'daily', '--from', '2026-03-02', '--to', '2026-03-03'],
  ['analytics', 'tokens', '--from', '2026-03-02T00:00:00Z', '--to', '2026-03-03'],
];

async function answers(url: string): Promise<{ library: unknown; cli: unknown[] }> {
  const ds = await openDataSource(parseDatabaseUrl(url), { poolSize: 1 });
  let library: unknown;
  try {
    library = await plansPerDay(ds);
  } finally {
    await ds.destroy();
  }
  const cli: unknown[] = [];
  for (const args of COMMANDS) {
    const out: string[] = [];
    const err: string[] = [];
    const code = await run(['node', 'plan-ledger', ...args, '--json'], {
      env: { DATABASE_URL: url, LOG_LEVEL: 'warn' },
      out: (l) => out.push(l),
      err: (l) => err.push(l),
    });
    expect({ args, code, err }).toEqual({ args, code: 0, err: [] });
    cli.push(JSON.parse(out.join('\n')));
  }
  return { library, cli };
}

async function pgAdmin(sql: string): Promise<void> {
  const ds = await openDataSource(parseDatabaseUrl(PG_ADMIN_URL), { poolSize: 1 });
  try {
    await ds.query(sql);
  } finally {
    await ds.destroy();
  }
}

describe('analytics days are UTC days on every database and in every session time zone', () => {
  const reference = new Map<string, { library: unknown; cli: unknown[] }>();
  const database = `pl_tz_${Date.now().toString(36)}_${randomBytes(3).toString('hex')}`;
  const pgUrl = (() => {
    const u = new URL(PG_ADMIN_URL);
    u.pathname = `/${database}`;
    u.search = '';
    return u.toString();
  })();

  beforeAll(async () => {
    for (const kind of ['sqlite', 'mariadb'] as const) {
      const { db, ds, close } = await createMigratedDb(kind, { poolSize: 2 });
      try {
        await new PlanEventStore(ds).persist(events());
        await ds.destroy();
        reference.set(kind, await answers(db.url));
      } finally {
        await close();
      }
    }
    // A database of our own (not a schema: the session zone is a database setting), dropped after.
    await pgAdmin(`CREATE DATABASE "${database}"`);
    await pgAdmin(`ALTER DATABASE "${database}" SET timezone TO 'Pacific/Kiritimati'`);
    const ds = await openDataSource(parseDatabaseUrl(pgUrl), { poolSize: 2 });
    try {
      await runMigrations(ds);
      await new PlanEventStore(ds).persist(events()); // written in a +14 session too
    } finally {
      await ds.destroy();
    }
  }, 120_000);

  afterAll(async () => {
    if (process.env.KEEP_TEST_DB !== '1') await pgAdmin(`DROP DATABASE IF EXISTS "${database}" WITH (FORCE)`);
  });

  it('SQLite and MariaDB agree, on the UTC days', () => {
    const sqlite = reference.get('sqlite')!;
    expect(reference.get('mariadb')).toEqual(sqlite);
    expect((sqlite.library as { day: string; totalPlans: number }[]).map((d) => [d.day, d.totalPlans])).toEqual([
      ['2026-03-03', 1],
      ['2026-03-02', 3],
      ['2026-03-01', 3],
    ]);
  });

  it.each(['Pacific/Kiritimati', 'America/Adak', 'UTC'])(
    'PostgreSQL in a %s session gives the same days, library and CLI',
    async (zone) => {
      await pgAdmin(`ALTER DATABASE "${database}" SET timezone TO '${zone}'`);
      const probe = await openDataSource(parseDatabaseUrl(pgUrl), { poolSize: 1 });
      try {
        expect(await probe.query('SHOW TimeZone')).toEqual([{ TimeZone: zone }]); // the zone is really in force
      } finally {
        await probe.destroy();
      }
      expect(await answers(pgUrl)).toEqual(reference.get('sqlite'));
    },
  );

  it('a real CLI process in yet another local zone (TZ=Pacific/Kiritimati) on an America/Adak session gives them too', async () => {
    await pgAdmin(`ALTER DATABASE "${database}" SET timezone TO 'America/Adak'`);
    const result = await runCli(['analytics', 'daily', '--json'], { DATABASE_URL: pgUrl, TZ: 'Pacific/Kiritimati' });
    expect(result).toMatchObject({ code: 0, stderr: '' });
    expect(JSON.parse(result.stdout)).toEqual(reference.get('sqlite')!.cli[0]);
  });
});
