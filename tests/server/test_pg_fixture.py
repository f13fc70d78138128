"""The throwaway PostgreSQL of the tests (pg_fixture.py) works as the
PostgreSQL store's tests and the shared-mode fault tests need it: it starts
as root or not, answers queries, keeps committed data across a crash
(`pg_ctl stop -m immediate`) on the same port, and leaves nothing behind."""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pg_fixture import Postgres  # noqa: E402


class TestPgFixture(unittest.TestCase):
    def test_start_query_crash_restart_close(self):
        pg = Postgres()
        try:
            pg.start()
            self.assertEqual(pg.psql("SELECT 1"), "1")
            self.assertTrue(pg.url().startswith("postgres://postgres:"))
            pg.psql("CREATE TABLE t (x int)")
            pg.psql("INSERT INTO t VALUES (41), (1)")
            port = pg.port
            pg.restart("immediate")
            self.assertEqual(pg.port, port)
            self.assertEqual(pg.psql("SELECT sum(x) FROM t"), "42")
            self.assertEqual(pg.psql("SELECT pg_is_in_recovery()"), "f")
        finally:
            pg.close()
        self.assertFalse(os.path.exists(pg.dir))


if __name__ == "__main__":
    unittest.main(verbosity=2)
