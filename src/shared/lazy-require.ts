/**
 * A module loaded the first time it is used rather than when its importer loads: what keeps
 * `--help` and the registration of every CLI command cheap, and `plan-ledger/publisher` free of
 * what an executor does not ask for. The one way the code base loads a module on demand.
 *
 * `from` is the importer's own `require`, so `id` resolves from the importer's folder, in the tsx
 * sources and in the compiled CommonJS alike (an `import()` would be an ES module load there).
 * Write the type as `typeof import('./the-module')`: dependency-cruiser then still sees the edge.
 */
export function lazyRequire<T>(from: NodeJS.Require, id: string): () => T {
  let loaded: T | undefined;
  return () => (loaded ??= from(id) as T);
}
