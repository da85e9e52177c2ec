import { lookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';

/** Addresses a webhook may not reach unless allowed (WEBHOOKS_ALLOW_PRIVATE), each with the reason shown. */
const REFUSED: ReadonlyArray<[string, number, 'ipv4' | 'ipv6', string]> = [
  ['0.0.0.0', 8, 'ipv4', 'this network'],
  ['10.0.0.0', 8, 'ipv4', 'private'],
  ['100.64.0.0', 10, 'ipv4', 'shared address space (carrier NAT, cloud metadata)'],
  ['127.0.0.0', 8, 'ipv4', 'loopback'],
  ['169.254.0.0', 16, 'ipv4', 'link-local (cloud metadata)'],
  ['172.16.0.0', 12, 'ipv4', 'private'],
  ['192.0.0.0', 24, 'ipv4', 'IETF protocol assignments (cloud metadata)'],
  ['192.168.0.0', 16, 'ipv4', 'private'],
  ['198.18.0.0', 15, 'ipv4', 'benchmarking'],
  ['224.0.0.0', 4, 'ipv4', 'multicast'],
  ['240.0.0.0', 4, 'ipv4', 'reserved'],
  ['::', 128, 'ipv6', 'unspecified'],
  ['::1', 128, 'ipv6', 'loopback'],
  ['fe80::', 10, 'ipv6', 'link-local'],
  ['fc00::', 7, 'ipv6', 'unique local (cloud metadata)'],
  ['ff00::', 8, 'ipv6', 'multicast'],
];

const REFUSED_LISTS = REFUSED.map(([net, prefix, family, reason]) => {
  const list = new BlockList();
  list.addSubnet(net, prefix, family);
  return { list, family, reason };
});

/** Which addresses a deployment lets webhooks reach although they are refused by default. */
export interface PrivateAllowance {
  /** Every address (WEBHOOKS_ALLOW_PRIVATE=1). */
  all: boolean;
  /** These networks (WEBHOOKS_ALLOW_PRIVATE=127.0.0.1/32,10.1.0.0/16). */
  networks: BlockList;
  /** As configured, for messages. */
  text: string;
}

export const NO_PRIVATE: PrivateAllowance = { all: false, networks: new BlockList(), text: '' };

/** WEBHOOKS_ALLOW_PRIVATE: unset (none), `1`/`true` (all), or a comma-separated list of addresses and CIDR networks. */
export function parseAllowance(raw: string | undefined): PrivateAllowance {
  const text = (raw ?? '').trim();
  if (text === '' || text === '0' || text === 'false') return NO_PRIVATE;
  if (text === '1' || text === 'true') return { all: true, networks: new BlockList(), text };
  const networks = new BlockList();
  for (const item of text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)) {
    const [address, bits] = item.split('/');
    const family = isIP(address);
    const max = family === 6 ? 128 : 32;
    const prefix = bits === undefined ? max : Number(bits);
    if (family === 0 || !Number.isInteger(prefix) || prefix < 0 || prefix > max)
      throw new Error(
        `WEBHOOKS_ALLOW_PRIVATE: "${item}" is not an address or a network (e.g. 127.0.0.1, 10.0.0.0/8, fd00::/8); or set it to 1 to allow every address`,
      );
    networks.addSubnet(address, prefix, family === 6 ? 'ipv6' : 'ipv4');
  }
  return { all: false, networks, text };
}

/** The IPv4 address inside an IPv4-mapped (::ffff:a.b.c.d) or NAT64 (64:ff9b::a.b.c.d) IPv6 address. */
function embeddedIpv4(address: string): string | undefined {
  const m = /^(?:::ffff:|64:ff9b::)(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (m) return m[1];
  const hex = /^(?:::ffff:|64:ff9b::)([0-9a-f]{1,4}):([0-9a-f]{1,4})$/i.exec(address);
  if (!hex) return undefined;
  const hi = parseInt(hex[1], 16);
  const lo = parseInt(hex[2], 16);
  return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
}

/** Why `address` is refused by default (`loopback`, `private`...), or undefined when it is a public address. */
export function refusalOf(address: string): string | undefined {
  const v4 = isIP(address) === 6 ? embeddedIpv4(address) : undefined;
  const target = v4 ?? address;
  const family = isIP(target) === 6 ? 'ipv6' : 'ipv4';
  for (const r of REFUSED_LISTS) if (r.family === family && r.list.check(target, family)) return r.reason;
  return undefined;
}

function allowed(address: string, allow: PrivateAllowance): boolean {
  if (allow.all) return true;
  const family = isIP(address) === 6 ? 'ipv6' : 'ipv4';
  return allow.networks.check(address, family);
}

/** A webhook URL refused: not http(s), credentials in it, or an address it resolves to is refused. */
export class WebhookTargetError extends Error {}

/** The URL of a subscription, checked for form: http or https, a host, no user or password. */
export function parseWebhookUrl(raw: string): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new WebhookTargetError(`"${raw}" is not a URL (e.g. https://hooks.example.com/plan-ledger)`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:')
    throw new WebhookTargetError(`${url.protocol} URLs are not webhooks: use https:// (or http://)`);
  if (url.username || url.password)
    throw new WebhookTargetError(
      'a webhook URL may not hold a user or password: the signature authenticates the sender',
    );
  if (raw.length > 2000) throw new WebhookTargetError('a webhook URL is at most 2,000 characters');
  return url;
}

/** Where a delivery connects: the URL and the one address checked for it. */
export interface ResolvedTarget {
  url: URL;
  address: string;
  family: 4 | 6;
}

/**
 * Resolves the URL's host and checks every address it has: one refused (loopback, link-local,
 * private, metadata...) and not allowed refuses the URL. The caller connects to `address` only,
 * so a second resolution cannot swap in another (DNS rebinding).
 */
export async function resolveWebhookTarget(
  raw: string,
  allow: PrivateAllowance,
  resolve: (host: string) => Promise<{ address: string; family: number }[]> = (host) =>
    lookup(host, { all: true, verbatim: true }),
): Promise<ResolvedTarget> {
  const url = parseWebhookUrl(raw);
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const addresses = isIP(host) ? [{ address: host, family: isIP(host) }] : await resolveOrSay(host, resolve);
  if (addresses.length === 0) throw new WebhookTargetError(`${host} has no address`);
  for (const { address } of addresses) {
    const reason = refusalOf(address);
    if (reason && !allowed(address, allow))
      throw new WebhookTargetError(
        `${host} resolves to ${address} (${reason}): refused; set WEBHOOKS_ALLOW_PRIVATE=${address} (or 1) to allow it`,
      );
  }
  const first = addresses[0];
  return { url, address: first.address, family: first.family === 6 ? 6 : 4 };
}

async function resolveOrSay(
  host: string,
  resolve: (host: string) => Promise<{ address: string; family: number }[]>,
): Promise<{ address: string; family: number }[]> {
  try {
    return await resolve(host);
  } catch (err) {
    throw new WebhookTargetError(`cannot resolve ${host} (${(err as NodeJS.ErrnoException).code ?? String(err)})`);
  }
}
