"""test_pg_tls.py - sluiced's PostgreSQL store over TLS (docs/store.md, "TLS"):
the throwaway PostgreSQL (pg_fixture.py, tls=True) serves TLS with a
certificate for IP:127.0.0.1 made at test time; sluiced with
sslmode=verify-full and sslrootcert set to its CA starts, serves, and every
session it opens is encrypted (pg_stat_ssl); a wrong CA or a host the
certificate does not name is refused at start, with libpq's reason and what
to check. Waits are on what the server reports, with deadlines."""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pg_fixture import Postgres  # noqa: E402
from sluiced_fixture import SANITIZER_MARKS, binary, free_port, health, wait_until  # noqa: E402
from certs import make_ca  # noqa: E402

DEADLINE_S = 20
HINT = "sslrootcert must name the CA that signed the database server's certificate"


class PgTLSTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="sluiced-pg-tls-")
        make_ca(cls.dir, "other")
        cls.pg = Postgres(tls=True)
        try:
            cls.pg.start()
            cls.pg.psql("CREATE DATABASE sluice")
        except BaseException:
            cls.pg.close()
            raise

    @classmethod
    def tearDownClass(cls):
        cls.pg.close()
        shutil.rmtree(cls.dir, ignore_errors=True)

    def store(self, host="127.0.0.1", ca=None):
        return ("postgres://postgres@%s:%d/sluice?sslmode=verify-full&sslrootcert=%s"
                % (host, self.pg.port, ca or self.pg.ca_file))

    def start(self, store):
        port = free_port()
        log = os.path.join(self.dir, "sluiced.%d.log" % port)
        with open(log, "wb") as err:
            proc = subprocess.Popen([binary(), "--listen", "127.0.0.1:%d" % port, "--store", store],
                                    stdin=subprocess.DEVNULL, stdout=err, stderr=err)
        return proc, port, log

    def refused(self, store):
        proc, _, log = self.start(store)
        rc = proc.wait(DEADLINE_S)
        with open(log, errors="replace") as f:
            text = f.read()
        self.assertEqual(rc, 1, text)
        self.assertIn("cannot open the store", text)
        self.assertIn(HINT, text)
        return text

    def test_verify_full_works_and_encrypts_every_session(self):
        proc, port, log = self.start(self.store())
        try:
            wait_until(lambda: (health(port) or {}).get("role") == "leader" or
                       proc.poll() is not None, DEADLINE_S, what="sluiced leading")
            self.assertIsNone(proc.poll())
            rows = self.pg.psql("SELECT s.ssl FROM pg_stat_ssl s JOIN pg_stat_activity a "
                                "USING (pid) WHERE a.application_name = 'sluiced'")
            self.assertTrue(rows, "no session of sluiced's")
            self.assertEqual(set(rows.split()), {"t"}, rows)
        finally:
            proc.terminate()
            rc = proc.wait(DEADLINE_S)
            with open(log, errors="replace") as f:
                text = f.read()
            self.assertEqual(rc, 0, text)
            for mark in SANITIZER_MARKS:
                self.assertNotIn(mark, text)

    def test_a_wrong_ca_is_refused_at_start(self):
        text = self.refused(self.store(ca=os.path.join(self.dir, "other.pem")))
        self.assertIn("certificate verify failed", text)

    def test_a_host_the_certificate_does_not_name_is_refused_at_start(self):
        text = self.refused(self.store(host="localhost"))
        self.assertIn('does not match host name "localhost"', text)


if __name__ == "__main__":
    unittest.main(verbosity=2)
