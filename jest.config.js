/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  transform: {
    // isolatedModules: type-checking is `npm run typecheck`'s job; ts-jest only transpiles (fast).
    '^.+\\.ts$': ['ts-jest', { isolatedModules: true, diagnostics: false }],
  },
  setupFiles: ['reflect-metadata'],
  testTimeout: 60_000,
  // Every test closes what it opens; a hang here means a leaked Queue/Worker/DataSource.
  openHandlesTimeout: 5_000,
};
