/**
 * The arrows point down: `npm run lint:deps` (and CI) fail on an import cycle, or on an import
 * from a lower layer to a higher one. Layers, bottom up: shared -> contracts -> config -> pricing -> store
 * -> everything else (queue, publisher, dead-letters, retention, queries, health, worker, http,
 * console, cli, demo). Type-only imports count: a cycle of types is a cycle a reader follows too.
 * Libraries follow the layers too: only src/store/sql imports a database driver, and the contract,
 * pricing and the OTLP mapping import no TypeORM, BullMQ or ioredis.
 */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'an import cycle',
      from: { path: '^src' },
      to: { circular: true },
    },
    {
      name: 'shared-is-the-bottom',
      severity: 'error',
      comment: 'src/shared holds what every layer uses; it imports nothing else of src',
      from: { path: '^src/shared/' },
      to: { path: '^src/', pathNot: '^src/shared/' },
    },
    {
      name: 'contracts-stand-alone',
      severity: 'error',
      comment: 'the wire contract is what executors depend on alone: it imports only src/shared',
      from: { path: '^src/contracts/' },
      to: { path: '^src/', pathNot: '^src/(contracts|shared)/' },
    },
    {
      name: 'config-below-store',
      severity: 'error',
      comment: 'configuration is read before anything runs: it imports only shared and contracts',
      from: { path: '^src/config/' },
      to: { path: '^src/', pathNot: '^src/(config|contracts|shared)/' },
    },
    {
      name: 'pricing-below-store',
      comment: 'pricing is pure arithmetic over the bundled price table: it imports only shared',
      severity: 'error',
      from: { path: '^src/pricing/' },
      to: { path: '^src/', pathNot: '^src/(pricing|shared)/' },
    },
    {
      name: 'store-below-the-rest',
      severity: 'error',
      comment: 'the store knows the database and the contract, nothing of queues, workers, HTTP or the CLI',
      from: { path: '^src/store/' },
      to: { path: '^src/', pathNot: '^src/(store|pricing|contracts|shared|config)/' },
    },
    {
      name: 'drivers-only-in-store-sql',
      severity: 'error',
      comment:
        "database drivers are the SQL dialects' business (src/store/sql): everything else reaches a database through them and TypeORM",
      from: { path: '^src/', pathNot: '^src/store/sql/' },
      to: { path: '(^|/)node_modules/(mssql|tedious|pg|pg-[^/]+|mysql2|better-sqlite3|sqlite3)/' },
    },
    {
      name: 'no-storage-or-queue-below',
      severity: 'error',
      comment:
        'the contract, pricing and OTLP mapping are pure: executors load the contract alone, and neither needs a database or a queue',
      from: { path: '^src/(contracts|pricing|otlp)/' },
      to: { path: '(^|/)node_modules/(typeorm|bullmq|ioredis)/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    // node_modules is not followed, but its packages are kept as leaves: the library rules above need them
    exclude: { path: '^dist/' },
  },
};
