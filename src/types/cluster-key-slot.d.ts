/** cluster-key-slot (ioredis's own dependency) ships no types. */
declare module 'cluster-key-slot' {
  /** Redis Cluster's slot of a key (its hash tag's, when it has one), as CLUSTER KEYSLOT gives it. */
  function clusterKeySlot(key: string | Buffer): number;
  export = clusterKeySlot;
}
