import { redactUrl } from './database-url';

/** One seed node of REDIS_CLUSTER_NODES. */
export interface ClusterNode {
  host: string;
  port: number;
}

/**
 * REDIS_CLUSTER_NODES, parsed: the seed nodes ioredis's Cluster discovers the others from, and the
 * credentials and TLS every node connection uses (written as in REDIS_URL, on any entry).
 */
export interface ClusterSeeds {
  nodes: ClusterNode[];
  username?: string;
  password?: string;
  /** `rediss://` on an entry: TLS to every node. */
  tls: boolean;
}

const EXPECTED =
  'expected host:port,host:port,... (an entry may be written as in REDIS_URL, e.g. rediss://host:port, to carry credentials and TLS)';

function parseEntry(raw: string): { node: ClusterNode; username?: string; password?: string; tls: boolean } {
  const withScheme = /^[a-z][a-z0-9+.-]*:\/\//i.test(raw) ? raw : `redis://${raw}`;
  let url: URL;
  try {
    url = new URL(withScheme);
  } catch {
    throw new Error(`"${redactUrl(raw)}" is not host:port; ${EXPECTED}`);
  }
  if (url.protocol !== 'redis:' && url.protocol !== 'rediss:')
    throw new Error(`"${redactUrl(raw)}" has scheme "${url.protocol}"; ${EXPECTED}`);
  if (!url.hostname || !url.port) throw new Error(`"${redactUrl(raw)}" needs a host and a port; ${EXPECTED}`);
  if (url.pathname.length > 1)
    throw new Error(`"${redactUrl(raw)}" names a database; Redis Cluster has only database 0`);
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  return {
    node: { host, port: Number(url.port) },
    username: url.username ? decodeURIComponent(url.username) : undefined,
    password: url.password ? decodeURIComponent(url.password) : undefined,
    tls: url.protocol === 'rediss:',
  };
}

/**
 * Parses REDIS_CLUSTER_NODES. Credentials and TLS may be written on one entry (they apply to every
 * node, as a cluster has one ACL and one TLS setting) but entries must not disagree on them.
 */
export function parseClusterNodes(raw: string): ClusterSeeds {
  const entries = raw
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  if (entries.length === 0) throw new Error(`no node given; ${EXPECTED}`);
  const parsed = entries.map(parseEntry);
  const agreed = <K extends 'username' | 'password'>(key: K): string | undefined => {
    const values = new Set(parsed.map((p) => p[key]).filter((v): v is string => v !== undefined));
    if (values.size > 1)
      throw new Error(`entries give different ${key}s; give the credentials once (the cluster has one)`);
    return [...values][0];
  };
  const schemes = new Set(
    entries.filter((e) => /^[a-z][a-z0-9+.-]*:\/\//i.test(e)).map((e) => e.slice(0, e.indexOf(':')).toLowerCase()),
  );
  if (schemes.size > 1)
    throw new Error('entries mix redis:// and rediss://; a cluster is reached with TLS on every node or on none');
  const tls = schemes.has('rediss');
  return { nodes: parsed.map((p) => p.node), username: agreed('username'), password: agreed('password'), tls };
}

/** `host:port,host:port` for messages and logs (never the credentials). */
export function describeClusterNodes(seeds: ClusterSeeds): string {
  return seeds.nodes.map((n) => `${n.host.includes(':') ? `[${n.host}]` : n.host}:${n.port}`).join(',');
}

/**
 * The hash tag of a BullMQ prefix, or null. Redis Cluster hashes only what lies between the first
 * `{` of a key and the next `}` when that is not empty; every key of a queue is
 * `<prefix>:<queue>:...`, so a tag in the prefix puts all of them in one slot, which BullMQ's
 * multi-key scripts need (without it: CROSSSLOT).
 */
export function prefixHashTag(prefix: string): string | null {
  const open = prefix.indexOf('{');
  if (open < 0) return null;
  const close = prefix.indexOf('}', open + 1);
  return close > open + 1 ? prefix.slice(open + 1, close) : null;
}

/** Why a prefix cannot be used on a cluster, in one line; null when it can. */
export function clusterPrefixProblem(prefix: string): string | null {
  if (prefixHashTag(prefix) !== null) return null;
  const suggestion = `{${prefix.replace(/[{}]/g, '') || 'plan-ledger'}}`;
  return `"${prefix}" has no {hash tag}: on Redis Cluster every key of a queue must hash to one slot (BullMQ's scripts touch several keys at once, else CROSSSLOT), so use e.g. QUEUE_PREFIX=${suggestion}`;
}
