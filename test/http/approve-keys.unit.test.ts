/**
 * HTTP_APPROVE_KEYS: `name:key` pairs with the approve scope, each key's name the decidedBy of its
 * decisions; a bad entry stops start-up with one line that names the variable and never the key.
 */
import { HTTP_ENV_HELP, loadHttpConfig } from '../../src/http/http-config';
import { ApiKeys } from '../../src/shared/api-keys';

const KEY_A = 'approve-key-a-0123456789abcdef';
const KEY_B = 'approve-key-b-0123456789abcdef';

function problem(value: string): string {
  try {
    loadHttpConfig({ HTTP_APPROVE_KEYS: value });
  } catch (err) {
    return (err as Error).message;
  }
  throw new Error('no error');
}

describe('HTTP_APPROVE_KEYS', () => {
  it('reads name:key pairs; an approve key alone is enough to start', () => {
    const config = loadHttpConfig({ HTTP_APPROVE_KEYS: ` alice@ops:${KEY_A} , bob.k_2-x:${KEY_B},` });
    expect(config.approveKeys).toEqual([
      { name: 'alice@ops', key: KEY_A },
      { name: 'bob.k_2-x', key: KEY_B },
    ]);
    expect(loadHttpConfig({ HTTP_READ_KEYS: KEY_A }).approveKeys).toEqual([]);
    expect(HTTP_ENV_HELP.map(([name]) => name)).toContain('HTTP_APPROVE_KEYS');
  });

  it.each([
    [KEY_A, 'HTTP_APPROVE_KEYS: entry 1 is not name:key (no colon)'],
    [
      `:${KEY_A}`,
      'HTTP_APPROVE_KEYS: entry 1: the name before the colon is not 1-64 characters of A-Z a-z 0-9 . _ @ -',
    ],
    [`bob:${KEY_B},al ice:${KEY_A}`, 'HTTP_APPROVE_KEYS: entry 2: the name before the colon is not 1-64 characters'],
    [`${'n'.repeat(65)}:${KEY_A}`, 'is not 1-64 characters'],
    [`alice:${KEY_A},bob:short`, 'HTTP_APPROVE_KEYS: entry 2 (bob): the key is shorter than 16 characters'],
    [`alice:${KEY_A},bob:${KEY_A}`, 'HTTP_APPROVE_KEYS: entries alice and bob have the same key: one key, one name'],
  ])('refuses %j with one line naming the entry, never the key', (value, message) => {
    const text = problem(value);
    expect(text).toContain(message);
    expect(text).not.toContain(KEY_A);
    expect(text).not.toContain('approve-key');
    expect(text.split('\n')).toHaveLength(1);
  });

  it('gives an approve key the approve scope and its name, and no other scope', () => {
    const keys = new ApiKeys([KEY_B], [], [], [{ name: 'alice', key: KEY_A }]);
    expect(keys.check(`Bearer ${KEY_A}`, 'approve')).toEqual({ ok: true, name: 'alice' });
    expect(keys.check(`Bearer ${KEY_A}`, 'read')).toEqual({
      ok: false,
      status: 403,
      message: 'this API key lacks the read scope',
    });
    expect(keys.check(`Bearer ${KEY_B}`, 'approve')).toMatchObject({ ok: false, status: 403 });
    expect(keys.check(`Bearer ${KEY_B}`, 'ingest')).toEqual({ ok: true });
    expect(keys.identify(KEY_A)).toEqual({ scopes: new Set(['approve']), name: 'alice' });
  });
});
