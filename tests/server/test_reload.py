"""test_reload.py - SIGHUP reads the configuration file again
(docs/configuration.md, "Reloading"): semaphores, tokens and limits change
live; a file that does not load keeps the running configuration and the
log says where the error is; what needs a restart says so and is kept.
Every wait is on a state the server reports, with a deadline."""
import os
import signal
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sluiced_fixture import ServerTestCase, wait_until  # noqa: E402

FIRST = """
semaphores:
  - name: reload/db
    limit: 2
tokens:
  - name: ops
    token: first-secret
    admin: true
limits:
  max_body: 65536
"""

SECOND = """
semaphores:
  - name: reload/db
    limit: 5
  - name: reload/new
    limit: 1
tokens:
  - name: ops
    token: first-secret
    admin: true
  - name: ci
    token: second-secret
    prefixes: [ci/]
limits:
  max_body: 300
"""


class TestReload(ServerTestCase):
    CONFIG = FIRST
    TOKEN = "first-secret"

    def write(self, text):
        with open(self.srv.config_path, "w") as f:
            f.write(text)

    def hup(self):
        self.srv.proc.send_signal(signal.SIGHUP)

    def sem_limit(self, name):
        r = self.srv.get("/v1/semaphores/" + name.replace("/", "%2F"))
        return r.json["limit"] if r.status == 200 else None

    def test_semaphores_tokens_and_limits_change_live(self):
        srv = self.srv
        self.assertEqual(self.sem_limit("reload/db"), 2)
        self.assertEqual(srv.get("/v1/queue", token="second-secret").status, 401)
        self.write(SECOND)
        self.hup()
        wait_until(lambda: self.sem_limit("reload/db") == 5, 10, what="the new limit")
        self.assertEqual(self.sem_limit("reload/new"), 1)
        # The new token works, for its prefixes only.
        r = srv.post("/v1/claims", {"holder": "ci/job", "locks": [{"mutex": "ci/lock"}]},
                     token="second-secret")
        self.assertEqual(r.status, 201, r)
        c = r.json
        self.assertEqual(srv.get("/v1/semaphores/reload%2Fdb", token="second-secret").status,
                         403)
        # The new body limit applies to what arrives now.
        r = srv.post("/v1/claims", {"holder": "x" * 400, "locks": [{"mutex": "big/m"}]})
        self.assertEqual(r.status, 413, r)
        self.assertIn("reload:", srv.stderr())
        # Back: the new semaphore, unused, goes; the first limit returns.
        srv.release(c["id"])
        self.write(FIRST)
        self.hup()
        wait_until(lambda: self.sem_limit("reload/new") is None, 10, what="the semaphore gone")
        self.assertEqual(self.sem_limit("reload/db"), 2)
        self.assertEqual(srv.get("/v1/queue", token="second-secret").status, 401)

    def test_a_broken_file_keeps_the_running_configuration(self):
        srv = self.srv
        before = srv.stderr().count("the running configuration is kept")
        self.write(FIRST + "semaphores_typo: 1\n")
        self.hup()
        wait_until(lambda: srv.stderr().count("the running configuration is kept") > before, 10,
                   what="the error logged")
        line = [l for l in srv.stderr().splitlines()
                if "the running configuration is kept" in l][-1]
        self.assertRegex(line, r"sluice\.yaml:\d+:\d+: unknown key \"semaphores_typo\"")
        self.assertEqual(self.sem_limit("reload/db"), 2)
        self.assertStillServing()
        self.write(FIRST)

    def test_what_needs_a_restart_is_kept_and_said(self):
        srv = self.srv
        # (listen and store come from the command line here, which wins over
        # the file at a reload as at the start: durability does not.)
        self.write("durability: full\n" + FIRST)
        self.hup()
        wait_until(lambda: "durability changed" in srv.stderr(), 10, what="the warning")
        self.assertStillServing()
        self.write(FIRST)


if __name__ == "__main__":
    unittest.main(verbosity=2)
