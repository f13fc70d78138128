"""test_pooler.py - sluiced behind PgBouncer (Debian's, started here on a
throwaway PostgreSQL): in transaction mode it refuses to start and says
why (a transaction pooler breaks session locks, notifications and prepared
statements: without the check it failed with "prepared statement s0
already exists", or worse, ran with a lock that was not its own); in
session mode it starts and leads.

SLUICED names the binary; PgBouncer comes from scripts/deps (pgbouncer).
"""
import os
import pwd
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "server"))
from pg_fixture import Postgres  # noqa: E402
from sluiced_fixture import binary, free_port, health, wait_until  # noqa: E402

PGBOUNCER = "/usr/sbin/pgbouncer"


class PgBouncer:
    def __init__(self, pg, mode):
        self.dir = pg.dir
        self.port = free_port()
        self.ini = os.path.join(self.dir, "pgbouncer-%s.ini" % mode)
        users = os.path.join(self.dir, "users.txt")
        with open(users, "w") as f:
            f.write('"postgres" ""\n')
        with open(self.ini, "w") as f:
            f.write("[databases]\nsluice = host=127.0.0.1 port=%d dbname=sluice\n"
                    "[pgbouncer]\nlisten_addr = 127.0.0.1\nlisten_port = %d\n"
                    "auth_type = trust\nauth_file = %s\npool_mode = %s\n"
                    "unix_socket_dir =\nlogfile = %s/pgbouncer-%s.log\n"
                    "pidfile = %s/pgbouncer-%s.pid\n"
                    "ignore_startup_parameters = extra_float_digits\n"
                    % (pg.port, self.port, users, mode, self.dir, mode, self.dir, mode))
        cmd = [PGBOUNCER, self.ini]
        if os.geteuid() == 0:  # PgBouncer refuses root: it runs as PostgreSQL's user
            pw = pwd.getpwnam("postgres")
            for p in (users, self.ini):
                os.chown(p, pw.pw_uid, pw.pw_gid)
            cmd = [PGBOUNCER, "-u", "postgres", self.ini]
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        wait_until(lambda: self._listening(), 10, what="PgBouncer listening")

    def _listening(self):
        import socket
        try:
            socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
            return True
        except OSError:
            return False

    def url(self):
        return "postgres://postgres@127.0.0.1:%d/sluice" % self.port

    def close(self):
        self.proc.terminate()
        self.proc.wait(timeout=30)


class TestPooler(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not os.path.exists(PGBOUNCER):
            raise AssertionError("%s is missing: scripts/deps installs it (pgbouncer)" % PGBOUNCER)
        cls.pg = Postgres().start()
        cls.pg.psql("CREATE DATABASE sluice")

    @classmethod
    def tearDownClass(cls):
        cls.pg.close()

    def test_transaction_mode_is_refused(self):
        bouncer = PgBouncer(self.pg, "transaction")
        try:
            r = subprocess.run([binary(), "--listen", "127.0.0.1:%d" % free_port(), "--store",
                                bouncer.url()], stdin=subprocess.DEVNULL, capture_output=True,
                               text=True, timeout=60)
        finally:
            bouncer.close()
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("transaction pooler", r.stderr)
        self.assertIn("session mode", r.stderr)
        self.assertNotIn("listening", r.stderr)

    def test_session_mode_works(self):
        bouncer = PgBouncer(self.pg, "session")
        port = free_port()
        proc = subprocess.Popen([binary(), "--listen", "127.0.0.1:%d" % port, "--store",
                                 bouncer.url()], stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            h = wait_until(lambda: (health(port) or {}).get("role") == "leader" and health(port),
                           20, what="sluiced leading through PgBouncer")
            self.assertEqual(h["epoch"] >= 1, True)
        finally:
            proc.terminate()
            self.assertEqual(proc.wait(timeout=30), 0, proc.stderr.read())
            bouncer.close()


if __name__ == "__main__":
    unittest.main(verbosity=2)
