#!/bin/sh
# Creates or upgrades Temporal's two PostgreSQL databases. docker-compose.yml runs it (service temporal-schema,
# image temporalio/admin-tools) before the server starts, on every `docker compose up`, so it must be safe to repeat:
# a new database gets the base schema, an existing one only the versioned migrations it lacks. That second case is
# also how a newer temporalio/server tag upgrades the schema.
# Never re-run `setup-schema` on an existing database: it rewrites the recorded schema version to 0.0, and the next
# `update-schema` then replays every migration over tables that already exist.
set -eu

: "${POSTGRES_SEEDS:?name the PostgreSQL host}" "${POSTGRES_USER:?name the PostgreSQL user}"
# temporal-sql-tool reads the password from SQL_PASSWORD, which keeps it off every command line.
: "${SQL_PASSWORD:?set SQL_PASSWORD (TEMPORAL_DB_PASSWORD in docker-compose.yml)}"
port=${DB_PORT:-5432}
schema_dir=/etc/temporal/schema/postgresql/v12

sql_tool() {
  temporal-sql-tool --plugin postgres12 --ep "$POSTGRES_SEEDS" -p "$port" -u "$POSTGRES_USER" "$@"
}

prepare() {
  db=$1
  versioned=$2
  if out=$(sql_tool --db "$db" create 2>&1); then
    echo "created database $db"
    sql_tool --db "$db" setup-schema -v 0.0
  elif printf '%s' "$out" | grep -q 'already exists'; then
    echo "database $db exists"
  else
    printf '%s\n' "$out" >&2
    exit 1
  fi
  sql_tool --db "$db" update-schema -d "$schema_dir/$versioned/versioned"
}

prepare "${DBNAME:-temporal}" temporal
prepare "${VISIBILITY_DBNAME:-temporal_visibility}" visibility
echo "Temporal schema is up to date"
