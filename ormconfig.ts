import { createDataSource } from './src/database/createDataSource.js';

/**
 * The one TypeORM data source, for the TypeORM CLI:
 *   DATABASE_URL=postgres://... npx typeorm migration:run -d dist/ormconfig.js
 * The application itself migrates through `intent-ledger migrate` or `createLedger()`, which also
 * serialise concurrent migrators (see src/database/migrate.ts).
 */
const dataSource = createDataSource({
  url: process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres',
});

export default dataSource;
