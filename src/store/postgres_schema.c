/* postgres_schema.c - the PostgreSQL store's schema and its migrations.
 *
 * The same tables and columns as the SQLite store's schema 5 (version 1
 * here was SQLite's 3, version 2 is SQLite's 4, version 3 SQLite's 5; sqlite_schema.c has what
 * each integer and JSON column means; the values are the engine's enums,
 * never renumbered), in PostgreSQL's types, plus the
 * leader's row of shared mode. The version is in schema_version; a
 * migration runs in a transaction of its own under an advisory lock, so
 * that servers starting together on a new database migrate it once. A
 * released script is never edited: a change is a new script. */
#include "postgres_int.h"

/* Version 1. log.seq_hi and log.time_hi are indexed: a read of the event
 * log finds its first record with one index lookup. */
static const char schema_v1[] =
    "CREATE TABLE meta ("
    "  id integer PRIMARY KEY CHECK (id = 1),"
    "  next_seq bigint NOT NULL,"
    "  next_arrival bigint NOT NULL,"
    "  next_grant bigint NOT NULL,"
    "  token_floor bigint NOT NULL,"
    "  applied bigint NOT NULL);"
    "INSERT INTO meta VALUES (1, 1, 1, 1, 0, 0);"
    "CREATE TABLE configs ("
    "  name text PRIMARY KEY,"
    "  lim bigint NOT NULL,"
    "  strategy integer NOT NULL,"
    "  lease_ms bigint NOT NULL,"
    "  source integer NOT NULL,"
    "  overtake_ms bigint NOT NULL);"
    "CREATE TABLE locks ("
    "  key text PRIMARY KEY,"
    "  token bigint NOT NULL);"
    "CREATE TABLE claims ("
    "  arrival bigint PRIMARY KEY,"
    "  id text NOT NULL UNIQUE,"
    "  holder text NOT NULL,"
    "  state integer NOT NULL,"
    "  priority integer NOT NULL,"
    "  created bigint NOT NULL,"
    "  arrived bigint NOT NULL,"
    "  rebalance_key text,"
    "  grp text,"
    "  cancel integer NOT NULL,"
    "  grace bigint NOT NULL,"
    "  lease bigint NOT NULL,"
    "  timeout bigint NOT NULL,"
    "  life bigint NOT NULL,"
    "  granted bigint NOT NULL,"
    "  grant_seq bigint NOT NULL,"
    "  revoke_at bigint NOT NULL,"
    "  ended bigint NOT NULL,"
    "  reason integer NOT NULL,"
    "  by_claim text,"
    "  locks text NOT NULL,"
    "  tags text NOT NULL,"
    "  idem text,"
    "  idem_fp bigint NOT NULL);"
    "CREATE TABLE log ("
    "  id bigint PRIMARY KEY,"
    "  seq_hi bigint NOT NULL,"
    "  time_hi bigint NOT NULL,"
    "  events integer NOT NULL,"
    "  rec bytea NOT NULL);"
    "CREATE INDEX log_seq ON log (seq_hi);"
    "CREATE INDEX log_time ON log (time_hi);"
    "CREATE TABLE claim_log ("
    "  id text PRIMARY KEY,"
    "  first bigint NOT NULL);"
    "CREATE INDEX claim_log_first ON claim_log (first);"
    "CREATE TABLE sluice_leader ("
    "  id integer PRIMARY KEY CHECK (id = 1),"
    "  epoch bigint NOT NULL,"
    "  addr text,"
    "  batch bigint NOT NULL);"
    "INSERT INTO sluice_leader VALUES (1, 0, NULL, 0);";

/* Version 2: a configuration's scheduling rules, as SQLite's version 4
 * (NULL: none, as every configuration saved before has). */
static const char schema_v2[] = "ALTER TABLE configs ADD COLUMN rules text;";

/* Version 3: who made a claim, as SQLite's version 5 (NULL: none, as every
 * claim saved before has). */
static const char schema_v3[] = "ALTER TABLE claims ADD COLUMN actor text;";

const char *const sl__pg_migrations[] = {schema_v1, schema_v2, schema_v3};
const int sl__pg_nmigrations = (int)(sizeof(sl__pg_migrations) / sizeof(sl__pg_migrations[0]));
