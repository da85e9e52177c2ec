import { loadConfig } from '../../src/config/config';
import { parseClusterNodes, prefixHashTag } from '../../src/config/redis-cluster-nodes';

describe('REDIS_CLUSTER_NODES', () => {
  it('takes host:port entries, and credentials/TLS written as in REDIS_URL on any entry', () => {
    expect(parseClusterNodes(' 10.0.0.1:7000, 10.0.0.2:7001 ,')).toEqual({
      nodes: [
        { host: '10.0.0.1', port: 7000 },
        { host: '10.0.0.2', port: 7001 },
      ],
      username: undefined,
      password: undefined,
      tls: false,
    });
    expect(parseClusterNodes('rediss://app:s%3Acret@redis-a:6380,redis-b:6380')).toEqual({
      nodes: [
        { host: 'redis-a', port: 6380 },
        { host: 'redis-b', port: 6380 },
      ],
      username: 'app',
      password: 's:cret',
      tls: true,
    });
  });

  it('names what is wrong with a bad entry', () => {
    expect(() => parseClusterNodes('10.0.0.1')).toThrow('"10.0.0.1" needs a host and a port');
    expect(() => parseClusterNodes('redis://a:1/2')).toThrow(
      '"redis://a:1/2" names a database; Redis Cluster has only database 0',
    );
    expect(() => parseClusterNodes('http://a:1')).toThrow('"http://a:1" has scheme "http:"');
    expect(() => parseClusterNodes('redis://a:1,rediss://b:2')).toThrow('entries mix redis:// and rediss://');
    expect(() => parseClusterNodes('redis://u:p1@a:1,redis://u:p2@b:2')).toThrow('entries give different passwords');
  });

  it('finds the hash tag as Redis does: the first {, the next }, not empty', () => {
    expect(prefixHashTag('{plan-ledger}')).toBe('plan-ledger');
    expect(prefixHashTag('app-{pl}-x')).toBe('pl');
    expect(prefixHashTag('plan-ledger')).toBeNull();
    expect(prefixHashTag('{}x')).toBeNull();
    expect(prefixHashTag('{open')).toBeNull();
  });

  it('loadConfig: a cluster with an untagged prefix is one configuration error; without a cluster the prefix is free', () => {
    expect(() => loadConfig({ REDIS_CLUSTER_NODES: 'a:1', QUEUE_PREFIX: 'pl' })).toThrow(
      'invalid configuration: QUEUE_PREFIX: "pl" has no {hash tag}: on Redis Cluster every key of a queue must hash to one slot (BullMQ\'s scripts touch several keys at once, else CROSSSLOT), so use e.g. QUEUE_PREFIX={pl}',
    );
    expect(loadConfig({ REDIS_CLUSTER_NODES: 'a:1', QUEUE_PREFIX: '{pl}' }).redisClusterNodes).toEqual({
      nodes: [{ host: 'a', port: 1 }],
      tls: false,
      username: undefined,
      password: undefined,
    });
    expect(loadConfig({ QUEUE_PREFIX: 'pl' }).redisClusterNodes).toBeNull();
  });
});
