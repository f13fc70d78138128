"""Runs one of the PostgreSQL store's C tests (tests/store/test_pg_*.c)
against a throwaway PostgreSQL: python3 run_with_pg.py path/to/store_test_pg_X.
The cluster is the server tests' (tests/server/pg_fixture.py); the test gets
its URL in SLUICE_TEST_PG_URL, with a database of its own that it may empty,
and the cluster is removed whatever the outcome."""
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "server"))

from pg_fixture import Postgres  # noqa: E402


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: run_with_pg.py TEST_BINARY")
    pg = Postgres()
    try:
        pg.start()
        pg.psql("CREATE DATABASE store_test")
        env = dict(os.environ, SLUICE_TEST_PG_URL=pg.url("store_test"))
        rc = subprocess.run([sys.argv[1]], env=env, check=False).returncode
    finally:
        pg.close()
    sys.exit(rc)


if __name__ == "__main__":
    main()
