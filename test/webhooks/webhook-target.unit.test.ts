/**
 * The SSRF guard: a webhook URL is refused when any address its host resolves to is loopback,
 * link-local (cloud metadata), private or reserved, unless WEBHOOKS_ALLOW_PRIVATE allows it; the
 * delivery connects to the address checked.
 */
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { sendWebhook } from '../../src/webhooks/webhook-sender';
import { webhookConfigFromEnv } from '../../src/webhooks/webhook-config';
import {
  NO_PRIVATE,
  parseAllowance,
  refusalOf,
  resolveWebhookTarget,
  WebhookTargetError,
} from '../../src/webhooks/webhook-target';

const resolvesTo =
  (...addresses: string[]) =>
  async () =>
    addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));

describe('webhook target check', () => {
  it.each([
    ['http://127.0.0.1/x', 'loopback'],
    ['http://127.8.9.10/x', 'loopback'],
    ['http://[::1]/x', 'loopback'],
    ['http://169.254.169.254/latest/meta-data/', 'link-local (cloud metadata)'],
    ['http://[fd00:ec2::254]/', 'unique local (cloud metadata)'],
    ['http://100.100.100.200/', 'shared address space (carrier NAT, cloud metadata)'],
    ['http://10.1.2.3/x', 'private'],
    ['http://172.20.0.1/x', 'private'],
    ['http://192.168.1.1/x', 'private'],
    ['http://0.0.0.0/x', 'this network'],
    ['http://[::ffff:127.0.0.1]/x', 'loopback'],
    ['http://[::ffff:a9fe:a9fe]/x', 'link-local (cloud metadata)'],
    ['http://[fe80::1]/x', 'link-local'],
  ])('refuses %s (%s)', async (url, reason) => {
    await expect(resolveWebhookTarget(url, NO_PRIVATE)).rejects.toThrow(`(${reason}): refused`);
  });

  it('refuses a host when any one of its addresses is refused, naming it and how to allow it', async () => {
    await expect(
      resolveWebhookTarget('https://hooks.example.com/x', NO_PRIVATE, resolvesTo('93.184.216.34', '10.0.0.7')),
    ).rejects.toThrow(
      'hooks.example.com resolves to 10.0.0.7 (private): refused; set WEBHOOKS_ALLOW_PRIVATE=10.0.0.7 (or 1) to allow it',
    );
  });

  it('takes a public host, and pins its first checked address', async () => {
    const t = await resolveWebhookTarget(
      'https://hooks.example.com/x',
      NO_PRIVATE,
      resolvesTo('93.184.216.34', '2606:2800:220:1::1'),
    );
    expect([t.address, t.family, t.url.hostname]).toEqual(['93.184.216.34', 4, 'hooks.example.com']);
    expect(refusalOf('8.8.8.8')).toBeUndefined();
    expect(refusalOf('2001:4860:4860::8888')).toBeUndefined();
  });

  it('allows what WEBHOOKS_ALLOW_PRIVATE lists, and only that', async () => {
    const allow = parseAllowance('127.0.0.1, 10.20.0.0/16');
    await expect(resolveWebhookTarget('http://127.0.0.1:9/x', allow)).resolves.toMatchObject({ address: '127.0.0.1' });
    await expect(resolveWebhookTarget('http://10.20.3.4/x', allow)).resolves.toMatchObject({ address: '10.20.3.4' });
    await expect(resolveWebhookTarget('http://127.0.0.2/x', allow)).rejects.toThrow('(loopback): refused');
    await expect(resolveWebhookTarget('http://169.254.169.254/', parseAllowance('1'))).resolves.toBeDefined();
  });

  it('refuses what is not an http(s) URL, or holds credentials, in one line', async () => {
    await expect(resolveWebhookTarget('ftp://example.com/x', NO_PRIVATE)).rejects.toThrow(WebhookTargetError);
    await expect(resolveWebhookTarget('not a url', NO_PRIVATE)).rejects.toThrow('is not a URL');
    await expect(resolveWebhookTarget('https://u:p@example.com/x', NO_PRIVATE)).rejects.toThrow(
      'may not hold a user or password',
    );
    await expect(
      resolveWebhookTarget('https://nowhere.invalid/x', NO_PRIVATE, async () => {
        throw Object.assign(new Error('nope'), { code: 'ENOTFOUND' });
      }),
    ).rejects.toThrow('cannot resolve nowhere.invalid (ENOTFOUND)');
  });

  it('names a wrong WEBHOOKS_* setting in one line', () => {
    expect(() => webhookConfigFromEnv({ WEBHOOKS_ALLOW_PRIVATE: 'localhost' })).toThrow(
      'WEBHOOKS_ALLOW_PRIVATE: "localhost" is not an address or a network',
    );
    expect(() => webhookConfigFromEnv({ WEBHOOKS_MAX_ATTEMPTS: '0' })).toThrow('WEBHOOKS_MAX_ATTEMPTS: 0 is outside');
    expect(() => webhookConfigFromEnv({ WEBHOOKS_TIMEOUT_MS: '5000', WEBHOOKS_LEASE_MS: '6000' })).toThrow(
      'WEBHOOKS_LEASE_MS: 6000 is less than twice WEBHOOKS_TIMEOUT_MS',
    );
    expect(() => webhookConfigFromEnv({ WEBHOOKS_BACKLOG_YIELD_MS: '-1' })).toThrow('WEBHOOKS_BACKLOG_YIELD_MS');
    expect(webhookConfigFromEnv({}).backlogYieldMs).toBe(10_000);
    expect(webhookConfigFromEnv({ WEBHOOKS_BACKLOG_YIELD_MS: '0' }).backlogYieldMs).toBe(0);
  });

  it('connects to the checked address, not to what the host name would resolve to again', async () => {
    const hosts: string[] = [];
    const server = http.createServer((req, res) => {
      hosts.push(String(req.headers.host));
      res.writeHead(204).end();
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const port = (server.address() as AddressInfo).port;
      // a name that resolves nowhere: only the pinned address can be reached
      const target = await resolveWebhookTarget(
        `http://rebind.invalid:${port}/hook`,
        parseAllowance('127.0.0.1'),
        resolvesTo('127.0.0.1'),
      );
      expect(await sendWebhook(target, {}, '{}', 5_000)).toEqual({ ok: true, status: 204 });
      expect(hosts).toEqual([`rebind.invalid:${port}`]);
    } finally {
      server.close();
    }
  });
});
