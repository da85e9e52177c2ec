#!/bin/sh
# One-shot set-up of the compose stack's SQL Server: the database and two logins of plan-ledger's
# own (no service connects as sa). Safe to run again: every step checks first. Any error stops it
# (sqlcmd -b), so `migrate` never starts against a half-made database.
#
# Passwords reach sqlcmd as scripting variables read from the environment; a quote in a password
# is doubled here so it stays inside its T-SQL string literal.
set -eu
quote() { printf %s "$1" | sed "s/'/''/g"; }
export MIGRATE_PASSWORD_SQL="$(quote "$MSSQL_MIGRATE_PASSWORD")"
export WORKER_PASSWORD_SQL="$(quote "$MSSQL_WORKER_PASSWORD")"
exec /opt/mssql-tools18/bin/sqlcmd -b -C -S mssql -U sa -P "$MSSQL_SA_PASSWORD" -i /init/mssql-init.sql
