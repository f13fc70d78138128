#!/usr/bin/env python3
"""test_auth_matrix.py - every route against every kind of caller.

Routes x {no token, wrong token, admin, a prefix token inside the
namespace, a prefix token outside it} x {explicit locks, tags only, group
only, a semaphore made from a pattern}. The expected status of each cell is
written out in the tables below, so that a change to the rules shows up as
a changed line here. Every lock a claim touches counts, including those its
tags and group add (docs/api.md, Auth); a refused call changes nothing.

The namespace under test is team-a's. Its token covers team-a/, the tag
lock tag/tenant=team-a and the group locks group/team-a/; team-b's token
covers the same for team-b and is the "outside" caller.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sluiced_fixture as fx  # noqa: E402
from sluiced_fixture import ServerTestCase, q  # noqa: E402

ADMIN, TEAM_A, TEAM_B = "adm-secret", "a-secret", "b-secret"

CONFIG = """
tokens:
  - name: admin
    token: "%s"
    admin: true
  - name: team-a
    token: "%s"
    prefixes: ["team-a/", "tag/tenant=team-a", "group/team-a/"]
  - name: team-b
    token: "%s"
    prefixes: ["team-b/", "tag/tenant=team-b", "group/team-b/"]
""" % (ADMIN, TEAM_A, TEAM_B)

# The callers, in the order of every row below.
CALLERS = ("none", "wrong", "admin", "inside", "outside")
TOKENS = {"none": "", "wrong": "not-a-token", "admin": ADMIN, "inside": TEAM_A,
          "outside": TEAM_B}

# What a claim of each subject asks for (all inside team-a's namespace).
SUBJECTS = {
    "explicit": {"locks": [{"mutex": "team-a/deploy"}, {"semaphore": "team-a/db"}]},
    "tags": {"tags": {"tenant": "team-a"}},
    "group": {"group": "team-a/pr-1"},
    "pattern": {"locks": [{"semaphore": "team-a/pool/x", "slots": 2}]},
}

# Claim routes: status per caller, the same for every subject.
# A claim outside the token's prefixes is 404, word for word the answer for
# an id that does not exist (F8: a 403 told ids apart).
CLAIM_ROUTES = {
    #                          none  wrong admin inside outside
    "POST /v1/claims":        (401, 401, 201, 201, 403),
    "GET /v1/claims/ID":      (401, 401, 200, 200, 404),
    "GET /v1/claims/ID?wait": (401, 401, 200, 200, 404),
    "GET /v1/claims/ID/why":  (401, 401, 200, 200, 404),
    "POST /v1/claims/ID/renew": (401, 401, 200, 200, 404),
    "DELETE /v1/claims/ID":   (401, 401, 200, 200, 404),
    "POST /v1/claims/ID/cancel": (401, 401, 200, 200, 404),  # ended by then: unchanged
}

# Listings answer 200 to any known token; what they show is checked apart.
LISTINGS = {
    "GET /v1/claims":     (401, 401, 200, 200, 200),
    "GET /v1/queue":      (401, 401, 200, 200, 200),
    "GET /v1/semaphores": (401, 401, 200, 200, 200),
    "GET /v1/mutexes":    (401, 401, 200, 200, 200),
}

# Lock routes on team-a's names (an exact semaphore, a pattern, a semaphore
# made from the pattern, a tag semaphore, a mutex and a group mutex).
LOCK_ROUTES = {
    "GET /v1/semaphores/team-a/db":          (401, 401, 200, 200, 403),
    "PUT /v1/semaphores/team-a/db":          (401, 401, 200, 200, 403),
    "GET /v1/semaphores/team-a/pool/*":      (401, 401, 200, 200, 403),
    "PUT /v1/semaphores/team-a/pool/*":      (401, 401, 200, 200, 403),
    "GET /v1/semaphores/team-a/pool/x":      (401, 401, 200, 200, 403),
    "GET /v1/semaphores/tag/tenant=team-a":  (401, 401, 200, 200, 403),
    "GET /v1/mutexes/team-a/deploy":         (401, 401, 200, 200, 403),
    "GET /v1/mutexes/group/team-a/pr-1":     (401, 401, 200, 200, 403),
    "PUT /v1/semaphores/team-a/scratch":     (401, 401, 200, 200, 403),
    "DELETE /v1/semaphores/team-a/scratch":  (401, 401, 204, 204, 403),
}

# The event log answers any known token, each its own events (checked in
# test_events_show_only_the_namespace); /metrics spans every namespace:
# admins only; /healthz needs no token.
GLOBAL_ROUTES = {
    "GET /v1/events":           (401, 401, 200, 200, 200),
    "GET /v1/events?wait":      (401, 401, 200, 200, 200),
    "GET /v1/events/stream":    (401, 401, 200, 200, 200),
    "GET /metrics":             (401, 401, 200, 403, 403),
    "GET /healthz":             (200, 200, 200, 200, 200),
}


class TestAuthMatrix(ServerTestCase):
    CONFIG = CONFIG
    TOKEN = ADMIN

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        srv = cls.srv
        for name, limit in (("team-a/db", 4), ("team-a/pool/*", 4), ("tag/tenant=*", 8),
                            ("team-b/db", 4)):
            r = srv.put("/v1/semaphores/" + q(name), {"limit": limit})
            assert r.status == 200, r

    def call(self, route, caller, cid=None, subject=None):
        """Sends route (e.g. "GET /v1/claims/ID") as caller; returns the Response."""
        method, path = route.split(" ", 1)
        body = None
        if method == "POST" and path == "/v1/claims":
            body = dict(SUBJECTS[subject], holder="team-a/run-%s" % caller)
        if method == "PUT":
            body = {"limit": 4}
        path = path.replace("ID", cid or "")
        path = path.replace("?wait", "?wait=50ms").replace("/events?wait=50ms",
                                                         "/events?since=0&wait=50ms")
        if path == "/v1/events/stream":
            conn, resp = self.srv.start_request("GET", path, token=TOKENS[caller])
            try:  # an open stream has no end to read: its status is enough
                body = resp.read() if resp.status != 200 else b""
                headers = {k.lower(): v for k, v in resp.getheaders()}
                return fx.Response(resp.status, headers, body)
            finally:
                conn.close()
        return self.srv.request(method, path, body=body, token=TOKENS[caller])

    def check(self, table, label, caller, r):
        want = table[label][CALLERS.index(caller)]
        self.assertEqual(r.status, want, "%s as %s: %r" % (label, caller, r))
        if want in (401, 403, 404):
            code = {401: "unauthorized", 403: "forbidden", 404: "not_found"}[want]
            self.assertEqual(r.error_code, code, "%s as %s: %r" % (label, caller, r))

    def new_claim(self, subject):
        """A held claim of the subject, made by team-a (inside)."""
        r = self.srv.post("/v1/claims", dict(SUBJECTS[subject], holder="team-a/owner"),
                          token=TEAM_A)
        self.assertEqual(r.status, 201, r)
        self.assertEqual(r.json["state"], "held", r)
        return r.json

    def test_claim_routes(self):
        for subject in SUBJECTS:
            for caller in CALLERS:
                with self.subTest(subject=subject, caller=caller):
                    # Creation: a refused claim leaves nothing behind.
                    r = self.call("POST /v1/claims", caller, subject=subject)
                    self.check(CLAIM_ROUTES, "POST /v1/claims", caller, r)
                    mine = self.srv.get("/v1/claims?holder=" + q("team-a/run-" + caller))
                    live = [c for c in mine.json["claims"] if c["state"] == "held"]
                    self.assertEqual(len(live), 1 if r.status == 201 else 0, mine)
                    for c in live:
                        self.srv.release(c["id"])
                    # The others, on a claim of team-a's; DELETE and cancel last.
                    claim = self.new_claim(subject)
                    for route in CLAIM_ROUTES:
                        if route == "POST /v1/claims":
                            continue
                        r = self.call(route, caller, cid=claim["id"])
                        self.check(CLAIM_ROUTES, route, caller, r)
                    after = self.srv.claim_get(claim["id"])
                    want = "released" if caller in ("admin", "inside") else "held"
                    self.assertEqual(after["state"], want, after)
                    if want == "held":
                        self.srv.release(claim["id"])

    def test_tags_and_groups_are_locks(self):
        """team-a may not put a claim on team-b's tag or group locks, even
        with no explicit lock (it could take team-b's slots otherwise)."""
        for extra in ({"tags": {"tenant": "team-b"}}, {"group": "team-b/pr-1"},
                      {"tags": {"tenant": "team-a"}, "group": "team-b/pr-1"}):
            r = self.srv.post("/v1/claims", dict(extra, holder="team-a/squatter"),
                              token=TEAM_A)
            self.assertEqual(r.status, 403, r)
            self.assertEqual(r.error_code, "forbidden", r)
            msg = r.json["error"]["message"]
            self.assertTrue("tag/tenant=team-b" in msg or "group/team-b/pr-1" in msg, msg)
        self.assertEqual(self.srv.get("/v1/claims?holder=team-a/squatter").json["claims"], [])
        # team-b sees who holds its tag semaphore.
        b = self.srv.post("/v1/claims", {"holder": "team-b/run-8", "tags": {"tenant": "team-b"}},
                          token=TEAM_B)
        self.assertEqual((b.status, b.json["state"]), (201, "held"), b)
        sem = self.srv.get("/v1/semaphores/tag/tenant=team-b", token=TEAM_B)
        self.assertEqual(sem.status, 200, sem)
        self.assertEqual([h["holder"] for h in sem.json["holders"]], ["team-b/run-8"])
        self.srv.release(b.json["id"])

    def test_claim_without_locks_goes_by_holder(self):
        """Tags that match no configured semaphore add no lock: such a claim
        belongs to its holder's namespace."""
        body = {"tags": {"env": "unconfigured"}}
        r = self.srv.post("/v1/claims", dict(body, holder="team-a/free"), token=TEAM_A)
        self.assertEqual((r.status, r.json["locks"]), (201, []), r)
        cid = r.json["id"]
        self.assertEqual(self.srv.get("/v1/claims/" + cid, token=TEAM_A).status, 200)
        self.assertEqual(self.srv.get("/v1/claims/" + cid, token=TEAM_B).status, 404)
        listed = self.srv.get("/v1/claims", token=TEAM_B).json["claims"]
        self.assertNotIn(cid, [c["id"] for c in listed])
        r = self.srv.post("/v1/claims", dict(body, holder="not-mine"), token=TEAM_A)
        self.assertEqual(r.status, 403, r)
        self.assertIn("holder", r.json["error"]["message"])
        self.srv.release(cid)

    def test_listings_show_only_the_namespace(self):
        made = {s: self.new_claim(s) for s in SUBJECTS}
        pending = self.srv.post("/v1/claims", {"holder": "team-a/waiter",
                                               "locks": [{"mutex": "team-a/deploy"}]},
                                token=TEAM_A).json
        for route in LISTINGS:
            for caller in CALLERS:
                with self.subTest(route=route, caller=caller):
                    r = self.call(route, caller)
                    self.check(LISTINGS, route, caller, r)
                    if r.status != 200:
                        continue
                    text = json.dumps(r.json)
                    shown = {"GET /v1/claims": list(made.values()) + [pending],
                             "GET /v1/queue": [pending]}.get(route, [])
                    for c in shown:
                        self.assertEqual(c["id"] in text, caller in ("admin", "inside"),
                                         "%s as %s: %s" % (route, caller, c["id"]))
                    if route == "GET /v1/semaphores":
                        names = [s["name"] for s in r.json["semaphores"]]
                        self.assertEqual("team-a/db" in names, caller != "outside", names)
                        self.assertEqual("team-b/db" in names, caller in ("admin", "outside"),
                                         names)
        self.srv.release(pending["id"])
        for c in made.values():
            self.srv.release(c["id"])

    def test_lock_routes(self):
        held = self.new_claim("group")  # so that group/team-a/pr-1 has a holder
        for route in LOCK_ROUTES:
            for caller in CALLERS:
                with self.subTest(route=route, caller=caller):
                    if route.startswith("DELETE"):
                        self.srv.put("/v1/semaphores/team-a/scratch", {"limit": 1})
                    r = self.call(route, caller)
                    self.check(LOCK_ROUTES, route, caller, r)
        self.srv.release(held["id"])

    def test_events_show_only_the_namespace(self):
        """A limited token reads the events whose every lock is under its
        prefixes (a claim without locks: its holder), in pages, long polls
        and the stream; limit counts only those, next moves past the rest."""
        since = self.srv.events(0, limit=1)["next"]
        since = self.srv.get("/v1/events?since=%d&limit=10000" % since).json["next"]
        a = self.new_claim("explicit")
        b = self.srv.post("/v1/claims", {"holder": "team-b/run", "locks": [
            {"semaphore": "team-b/db"}]}, token=TEAM_B).json
        both = self.srv.post("/v1/claims", {"holder": "team-a/both", "locks": [
            {"mutex": "team-a/x"}, {"mutex": "team-b/x"}]}, token=ADMIN).json
        free = self.srv.post("/v1/claims", {"holder": "team-a/free",
                                            "tags": {"env": "none"}}, token=TEAM_A).json
        self.srv.put("/v1/semaphores/team-b/db", {"limit": 5})
        for cid in (a["id"], b["id"], both["id"], free["id"]):
            self.srv.release(cid)
        everything = self.srv.get("/v1/events?since=%d" % since).json
        want = {"inside": {a["id"], free["id"]}, "outside": {b["id"]}}
        pages = {caller: self.srv.get("/v1/events?since=%d" % since, token=TOKENS[caller]).json
                 for caller in want}
        for caller, claims in want.items():
            with self.subTest(caller=caller):
                page = pages[caller]
                self.assertEqual({e["claim"] for e in page["events"]} - {None}, claims, page)
                self.assertEqual(page["next"], everything["next"])
                configured = [e for e in page["events"] if e["claim"] is None]
                self.assertEqual(bool(configured), caller == "outside", page)
                # limit=1 a page at a time: every event once, in order.
                seen, at = [], since
                while True:  # (later events, the other caller's polls', are not counted)
                    one = self.srv.get("/v1/events?since=%d&limit=1" % at,
                                       token=TOKENS[caller]).json
                    self.assertLessEqual(len(one["events"]), 1, one)
                    if not one["events"] or one["events"][0]["seq"] > page["next"]:
                        break
                    seen += one["events"]
                    at = one["next"]
                self.assertEqual(seen, page["events"])
                # A long poll answers with the next event the token may see,
                # not with another namespace's.
                conn, resp = self.srv.start_request(
                    "GET", "/v1/events?since=%d&wait=20s" % everything["next"],
                    token=TOKENS[caller])
                try:
                    other = "team-b/later" if caller == "inside" else "team-a/later"
                    mine = "team-a/later" if caller == "inside" else "team-b/later"
                    for holder in (other, mine):
                        c = self.srv.post("/v1/claims", {"holder": holder, "locks": [
                            {"mutex": holder}]}, token=ADMIN).json
                        self.srv.release(c["id"])
                    got = json.loads(resp.read())
                    self.assertEqual({e["holder"] for e in got["events"]}, {mine}, got)
                finally:
                    conn.close()
                # The stream: the same events as the page.
                conn, resp = self.srv.start_request("GET", "/v1/events/stream?since=%d" % since,
                                                    token=TOKENS[caller])
                try:
                    ids = []
                    while len(ids) < len(page["events"]):
                        line = resp.fp.readline().decode()
                        if line.startswith("data: "):
                            ids.append(json.loads(line[6:])["seq"])
                    self.assertEqual(ids, [e["seq"] for e in page["events"]])
                finally:
                    conn.close()

    def test_release_by_prefix_within_the_token(self):
        """A limited token's DELETE /v1/claims?holder_prefix= ends only the
        claims it may release; the others are not counted (skipped is 0:
        F8). An admin may give any holder, here one of team-a's on team-b's
        lock."""
        mine = self.srv.post("/v1/claims", {"holder": "team-a/run-9/a", "locks": [
            {"mutex": "team-a/r9"}]}, token=TEAM_A).json
        theirs = self.srv.post("/v1/claims", {"holder": "team-a/run-9/b", "locks": [
            {"mutex": "team-b/r9"}]}, token=ADMIN).json
        r = self.srv.delete("/v1/claims?holder_prefix=team-a/run-9/", token=TEAM_A)
        self.assertEqual(r.json, {"released": 1, "withdrawn": 0, "canceled": 0, "skipped": 0}, r)
        self.assertEqual(self.srv.claim_get(mine["id"])["state"], "released")
        self.assertEqual(self.srv.claim_get(theirs["id"])["state"], "held")
        self.assertEqual(self.srv.delete("/v1/claims?holder_prefix=shared/", token="").status,
                         401)
        self.srv.release(theirs["id"])

    def test_cleanup_tells_nothing_of_other_tenants(self):
        """F8: DELETE /v1/claims?holder_prefix= as team-a over team-b's
        holders answers the same whether a holder exists or not (it counted
        them as skipped, which spelt out team-b's holder names a guess at a
        time); a claim id of team-b's is 404, the same body as a made-up id."""
        theirs = self.srv.post("/v1/claims", {"holder": "team-b/secret-run/build", "locks": [
            {"mutex": "team-b/f8"}]}, token=TEAM_B).json
        nothing = {"released": 0, "withdrawn": 0, "canceled": 0, "skipped": 0}
        for prefix in ("team-b/", "team-b/secret-run/", "team-b/no-such-run/"):
            r = self.srv.delete("/v1/claims?holder_prefix=" + q(prefix), token=TEAM_A)
            self.assertEqual((r.status, r.json), (200, nothing), prefix)
        self.assertEqual(self.srv.claim_get(theirs["id"])["state"], "held")
        made_up = "Z" * len(theirs["id"])
        for route in ("GET /v1/claims/ID", "POST /v1/claims/ID/renew", "GET /v1/claims/ID/why",
                      "DELETE /v1/claims/ID", "POST /v1/claims/ID/cancel"):
            real = self.call(route, "inside", cid=theirs["id"])
            fake = self.call(route, "inside", cid=made_up)
            self.assertEqual((real.status, real.body.replace(theirs["id"].encode(), b"ID")),
                             (404, fake.body.replace(made_up.encode(), b"ID")), route)
        self.assertEqual(self.srv.claim_get(theirs["id"])["state"], "held")
        self.srv.release(theirs["id"])

    def test_holders_stay_under_the_token_s_prefixes(self):
        """F12: team-a may not name a holder of team-b's, even on its own
        locks (the claim showed under team-b's run and cleanup); the 403
        says which prefixes it may use. An admin token is unrestricted."""
        body = {"holder": "team-b/evil", "locks": [{"mutex": "team-a/f12"}]}
        r = self.srv.post("/v1/claims", body, token=TEAM_A)
        self.assertEqual((r.status, r.error_code), (403, "forbidden"), r)
        self.assertIn('"team-a/"', r.json["error"]["message"])
        self.assertIn("team-b/evil", r.json["error"]["message"])
        self.assertEqual(self.srv.get("/v1/claims?holder=team-b/evil").json["claims"], [])
        r = self.srv.post("/v1/claims", body, token=ADMIN)
        self.assertEqual(r.status, 201, r)
        self.srv.release(r.json["id"])

    def test_global_routes(self):
        for route in GLOBAL_ROUTES:
            for caller in CALLERS:
                with self.subTest(route=route, caller=caller):
                    self.check(GLOBAL_ROUTES, route, caller, self.call(route, caller))

    def test_healthz_details_need_a_token(self):
        """F14: without a valid token /healthz says only that the server serves
        and its role; a limited token adds the version and the counts; the
        store (a path, or a database host and user) is an admin's."""
        anyone = {"status", "role"}
        limited = anyone | {"version", "claims", "next_seq"}
        want = {"none": anyone, "wrong": anyone, "admin": limited | {"store"},
                "inside": limited, "outside": limited}
        for caller in CALLERS:
            with self.subTest(caller=caller):
                r = self.srv.get("/healthz", token=TOKENS[caller])
                self.assertEqual(r.status, 200, r)
                got = set(r.json)
                if r.json["role"] != "leader":  # shared mode: the leader has the counts
                    got |= {"claims", "next_seq"} & want[caller]
                if caller != "none" and caller != "wrong":  # shared mode's epoch
                    got.discard("epoch")
                if caller == "admin":  # shared mode: the servers' URLs
                    got -= {"leader", "self"}
                self.assertEqual(got, want[caller], r.json)
                self.assertEqual(r.json["status"], "ok")
        # /v1/status gives a limited token the same, never the store
        self.assertNotIn("store", self.srv.get("/v1/status", token=TEAM_A).json)
        self.assertIn("store", self.srv.get("/v1/status", token=ADMIN).json)


if __name__ == "__main__":
    fx.main()
