"""test_reload.py - SIGHUP reads the configuration file again
(docs/configuration.md, "Reloading"): semaphores (their scheduling rules
too), tokens and limits change live; a file that does not load keeps the running configuration and the
log says where the error is; what needs a restart says so and is kept.
Every wait is on a state the server reports, with a deadline."""
import hashlib
import http.client
import json
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
    token: first-secret-0123456789
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
    token: first-secret-0123456789
    admin: true
  - name: ci
    token: second-secret-0123456789
    prefixes: [ci/]
limits:
  max_body: 300
"""


class TestReload(ServerTestCase):
    CONFIG = FIRST
    TOKEN = "first-secret-0123456789"

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
        self.assertEqual(srv.get("/v1/queue", token="second-secret-0123456789").status, 401)
        self.write(SECOND)
        self.hup()
        wait_until(lambda: self.sem_limit("reload/db") == 5, 10, what="the new limit")
        self.assertEqual(self.sem_limit("reload/new"), 1)
        # The new token works, for its prefixes only.
        r = srv.post("/v1/claims", {"holder": "ci/job", "locks": [{"mutex": "ci/lock"}]},
                     token="second-secret-0123456789")
        self.assertEqual(r.status, 201, r)
        c = r.json
        self.assertEqual(srv.get("/v1/semaphores/reload%2Fdb",
                                 token="second-secret-0123456789").status,
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
        self.assertEqual(srv.get("/v1/queue", token="second-secret-0123456789").status, 401)

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


# The scheduling rules in the file, with the API's names (docs/configuration.md,
# "Semaphores").
RULES = """
semaphores:
  - name: rules/runners
    limit: 4
    preempt: true
    preempt_grace: 1m
    max_pending: 50
    on_full: drop_oldest
  - name: rules/tenants
    limit: 8
    strategy: rebalanced
    weights: {paying: 3, "team b": 2}
    default_weight: 1
  - name: rules/github-api
    limit: 10
    rate: 30/1m
    burst: 5
    backdate: 1h
  - name: rules/plain
    limit: 1
"""

# The same semaphores with some rules changed, some added, some gone.
RULES_CHANGED = """
semaphores:
  - name: rules/runners
    limit: 4
    max_pending: 7
  - name: rules/tenants
    limit: 8
    strategy: rebalanced
    weights: {free: 1}
    default_weight: 4
  - name: rules/github-api
    limit: 10
    rate: 100/1s
  - name: rules/plain
    limit: 1
    preempt: true
"""


class TestRulesFromTheFile(ServerTestCase):
    CONFIG = RULES

    def write(self, text):
        with open(self.srv.config_path, "w") as f:
            f.write(text)

    def sem(self, name):
        r = self.srv.get("/v1/semaphores/" + name.replace("/", "%2F"))
        self.assertEqual(r.status, 200, r)
        return r.json

    def rules(self, name):
        keys = ("preempt", "preempt_grace", "max_pending", "on_full", "weights",
                "default_weight", "rate", "burst", "backdate")
        j = self.sem(name)
        return {k: j[k] for k in keys if k in j}

    def reload_to(self, text, name, want):
        self.write(text)
        self.srv.proc.send_signal(signal.SIGHUP)
        wait_until(lambda: self.rules(name) == want, 10, what="the rules of " + name)

    def assertFirstRules(self):
        self.assertEqual(self.rules("rules/runners"), {
            "preempt": True, "preempt_grace": "1m", "max_pending": 50,
            "on_full": "drop_oldest", "rate": None, "backdate": "0"})
        self.assertEqual(self.rules("rules/tenants"), {
            "preempt": False, "max_pending": None, "weights": {"paying": 3, "team b": 2},
            "default_weight": 1, "rate": None, "backdate": "0"})
        self.assertEqual(self.rules("rules/github-api"), {
            "preempt": False, "max_pending": None, "rate": "30/1m", "burst": 5,
            "backdate": "1h"})
        self.assertEqual(self.rules("rules/plain"), {
            "preempt": False, "max_pending": None, "rate": None, "backdate": "0"})

    def test_a_file_with_rules_configures_them(self):
        self.assertFirstRules()

    def test_a_reload_changes_the_rules(self):
        srv = self.srv
        try:
            self.reload_to(RULES_CHANGED, "rules/runners", {
                "preempt": False, "max_pending": 7, "on_full": "reject", "rate": None,
                "backdate": "0"})
            self.assertEqual(self.rules("rules/tenants"), {
                "preempt": False, "max_pending": None, "weights": {"free": 1},
                "default_weight": 4, "rate": None, "backdate": "0"})
            self.assertEqual(self.rules("rules/github-api"), {
                "preempt": False, "max_pending": None, "rate": "100/1s", "burst": 100,
                "backdate": "0"})
            self.assertEqual(self.rules("rules/plain"), {
                "preempt": True, "preempt_grace": "30s", "max_pending": None, "rate": None,
                "backdate": "0"})
            # The queue bound applies at once: 4 slots held, 7 claims waiting, the
            # 8th refused.
            held = srv.claim("h", [("s", "rules/runners", 4)])
            self.assertEqual(held["state"], "held")
            waiting = [srv.claim("w%d" % i, [("s", "rules/runners")]) for i in range(7)]
            self.assertEqual({c["state"] for c in waiting}, {"pending"})
            r = srv.post("/v1/claims", {"holder": "w7", "locks": [{"semaphore": "rules/runners"}]})
            self.assertError(r, 409, "queue_full")
            for c in waiting + [held]:
                srv.release(c["id"])
        finally:
            self.write(RULES)
            srv.proc.send_signal(signal.SIGHUP)
            wait_until(lambda: self.rules("rules/runners").get("max_pending") == 50, 10,
                       what="the first rules back")
        self.assertFirstRules()

    def test_rules_a_file_cannot_use_keep_the_running_ones(self):
        srv = self.srv
        before = srv.stderr().count("the running configuration is kept")
        self.write(RULES.replace("    max_pending: 50\n", ""))  # on_full alone
        srv.proc.send_signal(signal.SIGHUP)
        wait_until(lambda: srv.stderr().count("the running configuration is kept") > before, 10,
                   what="the error logged")
        line = [l for l in srv.stderr().splitlines()
                if "the running configuration is kept" in l][-1]
        self.assertRegex(line, r"sluice\.yaml:\d+:\d+: semaphores\[0\]\.on_full: applies only "
                               r"with a max_pending above 0")
        self.write(RULES)
        self.assertFirstRules()


RATED = """
semaphores:
  - name: github-api
    limit: 10
    rate: 6/1h
    burst: 2
"""


class TestFileSemaphoresAtStart(ServerTestCase):
    """S1, S14: the file's semaphores are applied at every start and on
    SIGHUP; one set as it is changes nothing. Its rate bucket is present at
    the start, so it starts empty: kill -9 and a restart never let more than
    the rate through (a token every 10 minutes here, far beyond the test;
    before the fix each start let the 2 of a full burst in)."""
    CONFIG = RATED

    def updated(self):
        return [e for e in self.srv.all_events() if e["type"] == "semaphore.updated"]

    def held(self, ids):
        return [i for i in ids if self.srv.claim_get(i)["state"] == "held"]

    def hup_and_wait(self):
        srv = self.srv
        before = srv.stderr().count(" read again: ")
        srv.proc.send_signal(signal.SIGHUP)
        wait_until(lambda: srv.stderr().count(" read again: ") > before, 10, what="the reload")

    def test_a_reload_records_only_real_changes(self):
        srv = self.srv
        before = self.updated()
        self.hup_and_wait()
        self.assertEqual(self.updated(), before)
        with open(srv.config_path, "w") as f:
            f.write(RATED.replace("limit: 10", "limit: 12\n    preempt: true"))
        self.hup_and_wait()
        new = self.updated()[len(before):]
        self.assertEqual([e["reason"] for e in new], ["limit 10 → 12; preempt on"])

    def test_restarts_never_refill_the_rate(self):
        srv = self.srv
        # Present at the start, the bucket started empty: nobody gets in
        # before the first token, restart or not.
        ids = [srv.claim("api/%d" % i, [("s", "github-api", 1)])["id"] for i in range(8)]
        self.assertEqual(self.held(ids), [])
        events = len(self.updated())
        for _ in range(3):
            srv.restart(hard=True)
            self.assertEqual(self.held(ids), [])
        self.assertEqual(len(self.updated()), events)
        for i in ids:
            srv.release(i)


TENANTS = """
tokens:
  - {name: admin, token: adm-secret-0123456789, admin: true}
  - {name: team-a, token: a-secret-0123456789, prefixes: ["team-a/"]}
  - {name: team-b, token: b-secret-0123456789, prefixes: ["team-b/"]}
"""
TEAM_A_GONE = TENANTS.replace(
    '  - {name: team-a, token: a-secret-0123456789, prefixes: ["team-a/"]}\n', "")
TEAM_A_NARROW = TENANTS.replace('["team-a/"]', '["team-a/other/"]')


class TestRevocation(ServerTestCase):
    """F9: a reload that removes or narrows a token reaches what it has
    open: its event streams end or are filtered by the new prefixes, its
    parked long polls end (their status line is out, so the connection is
    closed before the body), and an Idempotency-Key replay is authorized
    again. Before the fix all of them went on with the old token."""
    CONFIG = TENANTS
    TOKEN = "adm-secret-0123456789"

    def setUp(self):
        super().setUp()
        self.reload_to(TENANTS)

    def reload_to(self, text):
        srv = self.srv
        with open(srv.config_path, "w") as f:
            f.write(text)
        before = srv.stderr().count(" read again: ")
        srv.proc.send_signal(signal.SIGHUP)
        wait_until(lambda: srv.stderr().count(" read again: ") > before, 10, what="the reload")

    def last_seq(self):
        events = self.srv.all_events()
        return events[-1]["seq"] if events else 0

    def stream(self):
        conn, resp = self.srv.start_request("GET", "/v1/events/stream?since=%d" % self.last_seq(),
                                            token="a-secret-0123456789", timeout=10)
        self.assertEqual(resp.status, 200)
        return conn, resp

    def holders_until_end(self, resp, stop):
        """The holders of the stream's events until it ends or shows stop."""
        seen = []
        for line in iter(resp.readline, b""):
            if line.startswith(b"data: "):
                seen.append(json.loads(line[6:])["holder"])
                if seen[-1] == stop:
                    break
        return seen

    def test_a_removed_token_s_stream_ends(self):
        conn, resp = self.stream()
        try:
            self.reload_to(TEAM_A_GONE)
            cid = self.srv.claim("team-a/after-revoke", [("m", "team-a/x")])["id"]
            self.srv.release(cid)
            self.assertEqual(self.holders_until_end(resp, "team-a/after-revoke"), [])
        finally:
            conn.close()
        self.assertEqual(self.srv.get("/v1/claims", token="a-secret-0123456789").status, 401)

    def test_a_narrowed_token_s_stream_is_filtered(self):
        conn, resp = self.stream()
        try:
            self.reload_to(TEAM_A_NARROW)
            for holder in ("team-a/x", "team-a/other/y"):
                self.srv.release(self.srv.claim(holder, [("m", holder)])["id"])
            seen = self.holders_until_end(resp, "team-a/other/y")
            self.assertEqual(set(seen), {"team-a/other/y"}, seen)
        finally:
            conn.close()

    def test_permissions_narrowed_at_a_reload_filter_the_stream(self):
        """F7: `prefixes` turned into claim-only permissions is a narrowing
        like any: the stream no longer carries what the token may not read
        (another holder's claims on team-a/), only its own claims."""
        conn, resp = self.stream()
        try:
            self.reload_to(TENANTS.replace('prefixes: ["team-a/"]', 'claim: ["team-a/"]'))
            self.srv.release(self.srv.claim("other/x", [("m", "team-a/x")])["id"])
            self.srv.release(self.srv.claim("team-a/mine", [("m", "team-a/y")])["id"])
            seen = self.holders_until_end(resp, "team-a/mine")
            self.assertEqual(set(seen), {"team-a/mine"}, seen)
        finally:
            conn.close()
        # Its locks are no longer its to read, nor to configure.
        r = self.srv.get("/v1/mutexes/team-a/x", token="a-secret-0123456789")
        self.assertError(r, 403, "forbidden", contains="read permission")

    def test_a_stream_sees_everything_once_no_token_is_left(self):
        """A file without tokens admits every request as an admin's: a
        stream opened with a limited token then sees every event."""
        conn, resp = self.stream()
        try:
            self.reload_to("limits:\n")
            for holder in ("team-b/x", "team-a/y"):
                self.srv.release(self.srv.claim(holder, [("m", holder)])["id"])
            seen = self.holders_until_end(resp, "team-a/y")
            self.assertEqual(set(seen), {"team-b/x", "team-a/y"}, seen)
        finally:
            conn.close()

    def parked(self, path):
        conn, resp = self.srv.start_request("GET", path, token="a-secret-0123456789", timeout=10)
        self.assertEqual(resp.status, 200)
        return conn, resp

    def assertCut(self, resp):
        with self.assertRaises((http.client.IncompleteRead, ConnectionError)) as cm:
            resp.read()
        return cm

    def test_parked_long_polls_end(self):
        held = self.srv.claim("team-a/held", [("m", "team-a/held")])
        next_seq = self.last_seq()
        polls = [self.parked("/v1/events?since=%d&wait=20s" % next_seq),
                 self.parked("/v1/claims/%s?wait=20s" % held["id"])]
        try:
            self.reload_to(TEAM_A_NARROW)
            # The claim wait: its claim is outside the new prefixes.
            self.assertCut(polls[1][1])
            # The event wait reads with the new prefixes: team-a/x is not
            # for it any more, team-a/other/y is.
            self.srv.release(self.srv.claim("team-a/x", [("m", "team-a/x")])["id"])
            self.srv.release(self.srv.claim("team-a/other/y", [("m", "team-a/other/y")])["id"])
            page = json.loads(polls[0][1].read())
            self.assertEqual({e["holder"] for e in page["events"]}, {"team-a/other/y"}, page)
            # Removed: an event wait of the token is cut as well.
            poll = self.parked("/v1/events?since=%d&wait=20s" % self.last_seq())
            polls.append(poll)
            self.reload_to(TEAM_A_GONE)
            self.srv.release(self.srv.claim("team-a/other/z", [("m", "team-a/other/z")])["id"])
            self.assertCut(poll[1])
        finally:
            for conn, _ in polls:
                conn.close()
        self.srv.release(held["id"])

    def test_a_replay_is_authorized_again(self):
        body = {"holder": "team-a/r", "locks": [{"mutex": "team-a/idem"}]}
        headers = {"Idempotency-Key": "narrow-1"}
        first = self.srv.post("/v1/claims", body, headers=headers, token="a-secret-0123456789")
        self.assertEqual(first.status, 201, first)
        self.reload_to(TEAM_A_NARROW)
        again = self.srv.post("/v1/claims", body, headers=headers, token="a-secret-0123456789")
        self.assertEqual((again.status, again.error_code), (403, "forbidden"), again)
        self.assertNotIn(first.json["id"], again.body.decode())
        self.srv.release(first.json["id"])


class TestExposedSecrets(ServerTestCase):
    """F15: a file that holds a secret in clear and that every user may
    read is warned about, at start and at each reload; one that only
    holds hashes (token_sha256) or that is chmod 600 is not. A short clear
    secret is refused by a reload, and the running tokens are kept."""
    CONFIG = TENANTS
    TOKEN = "adm-secret-0123456789"
    WARNING = "every user may read it"

    def reload_to(self, text, mode):
        srv = self.srv
        with open(srv.config_path, "w") as f:
            f.write(text)
        os.chmod(srv.config_path, mode)
        before = srv.stderr().count(" read again: ")
        srv.proc.send_signal(signal.SIGHUP)
        wait_until(lambda: srv.stderr().count(" read again: ") > before, 10, what="the reload")

    def warnings(self):
        return self.srv.stderr().count(self.WARNING)

    def test_a_readable_file_with_clear_secrets_is_warned_about(self):
        n = self.warnings()
        self.reload_to(TENANTS, 0o644)
        self.assertEqual(self.warnings(), n + 1, self.srv.stderr())
        self.assertIn("mode 644", self.srv.stderr())
        self.reload_to(TENANTS, 0o600)
        self.assertEqual(self.warnings(), n + 1)
        # Only hashes: nothing to hide.
        hashed = TENANTS
        for secret in ("adm-secret-0123456789", "a-secret-0123456789", "b-secret-0123456789"):
            hashed = hashed.replace("token: " + secret, "token_sha256: " + sha256(secret))
        self.reload_to(hashed, 0o644)
        self.assertEqual(self.warnings(), n + 1)
        self.assertEqual(self.srv.get("/v1/claims").status, 200)

    def test_a_short_secret_is_refused_by_a_reload(self):
        srv = self.srv
        with open(srv.config_path, "w") as f:
            f.write(TENANTS.replace("a-secret-0123456789", "a-short"))
        srv.proc.send_signal(signal.SIGHUP)
        wait_until(lambda: "fewer than 16" in srv.stderr(), 10, what="the refusal logged")
        self.assertNotIn("a-short", srv.stderr())
        self.assertEqual(srv.get("/v1/claims", token="a-secret-0123456789").status, 200)
        self.assertEqual(srv.get("/v1/claims", token="a-short").status, 401)


def sha256(secret):
    return hashlib.sha256(secret.encode()).hexdigest()


if __name__ == "__main__":
    unittest.main(verbosity=2)
