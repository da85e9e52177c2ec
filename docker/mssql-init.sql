-- Run by docker/mssql-init.sh (sqlcmd -b: the first error stops it). Idempotent.
IF DB_ID('plan_ledger') IS NULL CREATE DATABASE plan_ledger;
GO
-- ids compare byte for byte whatever this default is (migrations give id columns a BIN2 collation);
-- READ_COMMITTED_SNAPSHOT: readers (CLI, analytics) do not wait on the worker's row locks
ALTER DATABASE plan_ledger SET READ_COMMITTED_SNAPSHOT ON WITH ROLLBACK IMMEDIATE;
GO
IF SUSER_ID('plan_ledger_migrate') IS NULL CREATE LOGIN plan_ledger_migrate WITH PASSWORD = '$(MIGRATE_PASSWORD_SQL)', DEFAULT_DATABASE = plan_ledger;
ELSE ALTER LOGIN plan_ledger_migrate WITH PASSWORD = '$(MIGRATE_PASSWORD_SQL)';
IF SUSER_ID('plan_ledger_worker') IS NULL CREATE LOGIN plan_ledger_worker WITH PASSWORD = '$(WORKER_PASSWORD_SQL)', DEFAULT_DATABASE = plan_ledger;
ELSE ALTER LOGIN plan_ledger_worker WITH PASSWORD = '$(WORKER_PASSWORD_SQL)';
GO
USE plan_ledger;
GO
-- migrate: owns the schema (DDL), nothing outside this database
IF USER_ID('plan_ledger_migrate') IS NULL CREATE USER plan_ledger_migrate FOR LOGIN plan_ledger_migrate;
ALTER ROLE db_owner ADD MEMBER plan_ledger_migrate;
-- worker and CLI: read and write rows, no DDL
IF USER_ID('plan_ledger_worker') IS NULL CREATE USER plan_ledger_worker FOR LOGIN plan_ledger_worker;
ALTER ROLE db_datareader ADD MEMBER plan_ledger_worker;
ALTER ROLE db_datawriter ADD MEMBER plan_ledger_worker;
GO
