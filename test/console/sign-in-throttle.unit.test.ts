import { SignInThrottle } from '../../src/console/sign-in-throttle';

describe('SignInThrottle', () => {
  it('refuses an address after maxFailures refused keys until its window has passed; others are not affected', () => {
    let now = 1_000_000;
    const t = new SignInThrottle({ maxFailures: 3, windowMs: 60_000, now: () => now });
    for (let i = 0; i < 3; i++) {
      expect(t.retryAfterSeconds('10.0.0.1')).toBe(0);
      t.failed('10.0.0.1');
    }
    expect(t.retryAfterSeconds('10.0.0.1')).toBe(60);
    expect(t.retryAfterSeconds('10.0.0.2')).toBe(0);
    now += 45_500;
    expect(t.retryAfterSeconds('10.0.0.1')).toBe(15);
    now += 14_500;
    expect(t.retryAfterSeconds('10.0.0.1')).toBe(0);
  });

  it('a successful sign-in clears the count', () => {
    const t = new SignInThrottle({ maxFailures: 2 });
    t.failed('a');
    t.succeeded('a');
    t.failed('a');
    expect(t.retryAfterSeconds('a')).toBe(0);
    t.failed('a');
    expect(t.retryAfterSeconds('a')).toBeGreaterThan(0);
  });

  it('tracks at most maxClients addresses, dropping the oldest', () => {
    const t = new SignInThrottle({ maxFailures: 1, maxClients: 2 });
    t.failed('a');
    t.failed('b');
    t.failed('c');
    expect(t.retryAfterSeconds('a')).toBe(0);
    expect(t.retryAfterSeconds('b')).toBeGreaterThan(0);
    expect(t.retryAfterSeconds('c')).toBeGreaterThan(0);
  });
});
