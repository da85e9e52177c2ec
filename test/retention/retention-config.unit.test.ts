import { ConfigError } from '../../src/config/config';
import {
  DEFAULT_RETENTION_POLICY,
  loadRetentionPolicy,
  parseCron,
  retentionPolicy,
  RETENTION_ENV_HELP,
} from '../../src/retention/retention-config';

describe('retention policy from the environment', () => {
  it('defaults: failed plans kept longer, a week of grace, daily at 03:00 UTC', () => {
    expect(loadRetentionPolicy({})).toEqual({
      completedDays: 30,
      failedDays: 90,
      cancelledDays: 30,
      graceDays: 7,
      dagTtlMinutes: 1440,
      orphanDays: 90,
      batchSize: 1000,
      maxRowsPerTransaction: 5000,
      requestTimeoutSeconds: 300,
      pausePercent: 300,
      cron: '0 3 * * *',
    });
    expect(DEFAULT_RETENTION_POLICY.failedDays).toBeGreaterThan(DEFAULT_RETENTION_POLICY.completedDays);
  });

  it('reads every variable, and documents each in the help', () => {
    const env = {
      RETENTION_COMPLETED_DAYS: '14',
      RETENTION_FAILED_DAYS: '180',
      RETENTION_CANCELLED_DAYS: ' 7 ',
      RETENTION_GRACE_DAYS: '0',
      RETENTION_DAG_TTL: '90m',
      RETENTION_DAG_TTL_HOURS: '1',
      RETENTION_ORPHAN_DAYS: '0',
      RETENTION_BATCH_SIZE: '500',
      RETENTION_MAX_ROWS: '2000',
      RETENTION_REQUEST_TIMEOUT: '0',
      RETENTION_PAUSE_PERCENT: '250',
      RETENTION_CRON: '*/15  *  * * *',
    };
    expect(loadRetentionPolicy(env)).toEqual({
      completedDays: 14,
      failedDays: 180,
      cancelledDays: 7,
      graceDays: 0,
      dagTtlMinutes: 90,
      orphanDays: 0,
      batchSize: 500,
      maxRowsPerTransaction: 2000,
      requestTimeoutSeconds: 0,
      pausePercent: 250,
      cron: '*/15 * * * *',
    });
    expect(RETENTION_ENV_HELP.map(([name]) => name).sort()).toEqual(Object.keys(env).sort());
    expect(loadRetentionPolicy({ RETENTION_CRON: 'off' }).cron).toBeNull();
  });

  it('RETENTION_DAG_TTL takes durations finer than an hour; the older RETENTION_DAG_TTL_HOURS still works', () => {
    const ttl = (env: Record<string, string>) => loadRetentionPolicy(env).dagTtlMinutes;
    expect(ttl({ RETENTION_DAG_TTL: '90m' })).toBe(90);
    expect(ttl({ RETENTION_DAG_TTL: '36h' })).toBe(2160);
    expect(ttl({ RETENTION_DAG_TTL: '2d' })).toBe(2880);
    expect(ttl({ RETENTION_DAG_TTL: 'off' })).toBe(0);
    expect(ttl({ RETENTION_DAG_TTL_HOURS: '2' })).toBe(120);
    expect(() => loadRetentionPolicy({ RETENTION_DAG_TTL: '1.5h' })).toThrow(
      'RETENTION_DAG_TTL: "1.5h" is not a duration; use a whole number and a unit m, h or d (e.g. 90m, 24h, 2d), at most 100 years, or 0 / off',
    );
    expect(() => loadRetentionPolicy({ RETENTION_DAG_TTL: '90' })).toThrow('RETENTION_DAG_TTL: "90" is not a duration');
  });

  it('names every bad variable in one error', () => {
    let error: unknown;
    try {
      loadRetentionPolicy({
        RETENTION_COMPLETED_DAYS: '0',
        RETENTION_FAILED_DAYS: 'ninety',
        RETENTION_BATCH_SIZE: '100000',
        RETENTION_CRON: 'daily',
      });
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).problems).toEqual([
      'RETENTION_COMPLETED_DAYS: 0 is outside 1-36500',
      'RETENTION_FAILED_DAYS: "ninety" is not an integer',
      'RETENTION_BATCH_SIZE: 100000 is outside 1-50000',
      'RETENTION_CRON: "daily" has 1 field; expected 5 (m h dom mon dow) or 6, or off',
    ]);
  });

  it('bounds the rows per transaction and the request timeout, one line per bad value', () => {
    expect(() => loadRetentionPolicy({ RETENTION_MAX_ROWS: '99', RETENTION_REQUEST_TIMEOUT: '5m' })).toThrow(
      expect.objectContaining({
        problems: [
          'RETENTION_MAX_ROWS: 99 is outside 100-1000000',
          'RETENTION_REQUEST_TIMEOUT: "5m" is not an integer',
        ],
      }),
    );
    expect(() => loadRetentionPolicy({ RETENTION_REQUEST_TIMEOUT: '86401' })).toThrow(
      'RETENTION_REQUEST_TIMEOUT: 86401 is outside 0-86400',
    );
    expect(() => retentionPolicy({ maxRowsPerTransaction: 0 })).toThrow(
      'maxRowsPerTransaction: 0 is not an integer in 100-1000000',
    );
  });

  it('rests three times as long as it worked by default; RETENTION_PAUSE_PERCENT is an integer in 0-10000', () => {
    expect(loadRetentionPolicy({}).pausePercent).toBe(300);
    expect(loadRetentionPolicy({ RETENTION_PAUSE_PERCENT: '0' }).pausePercent).toBe(0);
    expect(() => loadRetentionPolicy({ RETENTION_PAUSE_PERCENT: '10001' })).toThrow(
      'RETENTION_PAUSE_PERCENT: 10001 is outside 0-10000',
    );
    expect(() => loadRetentionPolicy({ RETENTION_PAUSE_PERCENT: '50%' })).toThrow(
      'RETENTION_PAUSE_PERCENT: "50%" is not an integer',
    );
    expect(() => retentionPolicy({ pausePercent: -1 })).toThrow('pausePercent: -1 is not an integer in 0-10000');
  });

  it('accepts 5- and 6-field cron patterns and rejects anything else', () => {
    expect(parseCron('0 3 * * MON-FRI')).toBe('0 3 * * MON-FRI');
    expect(parseCron('0 0 3 * * *')).toBe('0 0 3 * * *');
    expect(() => parseCron('0 3 * * * * *')).toThrow('7 fields');
    expect(() => parseCron('0 3 * * $')).toThrow('field "$" is not cron syntax');
  });

  it('checks a policy built in code too', () => {
    expect(retentionPolicy({ batchSize: 10 }).batchSize).toBe(10);
    expect(() => retentionPolicy({ graceDays: -1, completedDays: 1.5 })).toThrow(
      'completedDays: 1.5 is not an integer in 1-36500; graceDays: -1 is not an integer in 0-3650',
    );
  });
});
