import { signedHeaders } from '../../src/webhooks/webhook-sender';
import { newSecret } from '../../src/webhooks/webhook-subscriptions';
import { Receiver } from './receiver';

async function post(receiver: Receiver, headers: Record<string, string>, body: string): Promise<number> {
  const res = await fetch(receiver.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body,
  });
  return res.status;
}

describe('Receiver with verifyLater', () => {
  it('answers 204 to every request, then verifies the recorded ones: a good signature kept, a bad one counted', async () => {
    const secret = newSecret();
    const receiver = await Receiver.start(secret, 0, { verifyLater: true });
    try {
      const body = JSON.stringify({ type: 'plan.failed', timestamp: new Date().toISOString(), data: { planId: 'p1' } });
      const good = signedHeaders(secret, 'msg_good', body, new Date());
      const bad = signedHeaders(newSecret(), 'msg_bad', body, new Date());
      expect(await post(receiver, good, body)).toBe(204);
      expect(await post(receiver, bad, body)).toBe(204);
      expect(receiver.got).toHaveLength(0);

      receiver.verifyRecorded();

      expect(receiver.got.map((r) => [r.id, r.type, r.data])).toEqual([['msg_good', 'plan.failed', { planId: 'p1' }]]);
      expect(receiver.unverified).toBe(1);
    } finally {
      await receiver.close();
    }
  });
});
