/**
 * The fast lane (`npm run test:unit`): the tests that need no server, no Redis and no child
 * process (contracts, the projection and fold properties, batching, encoding, configuration,
 * generated SQL). Their files end in `.unit.test.ts`; `npm test` runs them with everything else.
 * @type {import('jest').Config}
 */
module.exports = { ...require('./jest.config.js'), testMatch: ['**/*.unit.test.ts'], maxWorkers: '100%' };
