import * as fs from 'node:fs';
import * as path from 'node:path';
import { Violation, parsePlanEvent } from '../../src/contracts';

const example = (type: string) =>
  JSON.parse(fs.readFileSync(path.join(__dirname, '..', '..', 'schemas', 'examples', `${type}.json`), 'utf8')) as {
    payload: Record<string, unknown>;
  };

function violations(input: unknown): string[] {
  const result = parsePlanEvent(input);
  return result.ok ? [] : result.error.violations.map((v: Violation) => v.message);
}

describe('approval.requested and approval.decided (contract 1.1)', () => {
  it('accepts the examples', () => {
    expect(violations(example('approval.requested'))).toEqual([]);
    expect(violations(example('approval.decided'))).toEqual([]);
  });

  it('needs an edit to carry the edited arguments’ digest, and nothing else to', () => {
    const edit = example('approval.decided');
    edit.payload.decision = 'edit';
    expect(violations(edit)).toEqual(['payload.editedArgsDigest is required when decision is edit']);
    edit.payload.editedArgsDigest = 'a'.repeat(64);
    expect(violations(edit)).toEqual([]);
    edit.payload.decision = 'approve';
    expect(violations(edit)).toEqual(['payload.editedArgsDigest must be absent unless decision is edit']);
  });

  it('refuses a request without a digest of 64 characters or without an expiry', () => {
    const req = example('approval.requested');
    req.payload.argsDigest = 'abc';
    delete req.payload.expiresAt;
    expect(violations(req)).toHaveLength(2);
  });
});
