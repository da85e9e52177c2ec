import 'reflect-metadata';
import { loadConfig } from './src/config/config';
import { createDataSource } from './src/store/data-source';

/**
 * The DataSource for the TypeORM CLI, built from the same DATABASE_URL as plan-ledger itself:
 *   npx typeorm migration:show -d dist/ormconfig.js
 * (`plan-ledger migrate` does the same without the TypeORM CLI.)
 */
export default createDataSource(loadConfig().database);
