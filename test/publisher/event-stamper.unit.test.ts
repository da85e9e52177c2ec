import { ENVELOPE } from '../../src/contracts/declaration';
import { EventStamper } from '../../src/publisher/event-stamper';

/**
 * The stamper fills in exactly the envelope fields the contract's declaration marks `stamp: true`,
 * in the declaration's field order, and passes every other field through as the caller gave it.
 */
describe('EventStamper follows the declaration', () => {
  const declared = Object.keys(ENVELOPE.fields);
  const stamps = declared.filter((name) => ENVELOPE.fields[name].stamp === true);

  it('stamps the fields the declaration marks as stamps, and only those', () => {
    const given = declared.filter((name) => !stamps.includes(name));
    const stamped: Record<string, unknown> = {
      ...new EventStamper(10).stamp(Object.fromEntries(given.map((n) => [n, n]))),
    };
    const filled = declared.filter((name) => !given.includes(name) && stamped[name] !== undefined);
    expect(filled).toEqual(stamps);
    expect(stamps.length).toBeGreaterThan(0);
  });

  it('builds the envelope in the declaration order, keeping what the caller set', () => {
    const input = Object.fromEntries(declared.map((name, i) => [name, `v${i}`]));
    const stamped = new EventStamper(10).stamp(input);
    expect(Object.keys(stamped)).toEqual(declared);
    expect(stamped).toEqual(input);
  });
});
