import { ALL_TEST_DBS, MSSQL_ADMIN_URL, MSSQL_HOW_TO } from '../support/databases';

// The store, worker, retention and read-side suites take SQL Server into their database lists when
// TEST_MSSQL_URL names one (test/support/databases.ts). Without one, this says how to run them.
describe('SQL Server suites', () => {
  it(MSSQL_ADMIN_URL ? 'run: SQL Server is in the list of databases' : 'are skipped without TEST_MSSQL_URL', () => {
    if (MSSQL_ADMIN_URL) expect(ALL_TEST_DBS).toContain('mssql');
    else {
      expect(ALL_TEST_DBS).not.toContain('mssql');
      process.stderr.write(`${MSSQL_HOW_TO}\n`);
    }
  });
});
