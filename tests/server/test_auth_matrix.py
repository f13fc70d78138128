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
covers the same for team-b and is the "outside" caller. F7: four more
tokens have one permission each on team-a's namespace (read, claim,
operate, configure), where team-a's `prefixes` give all four.
"""
import json
import os
import signal
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sluiced_fixture as fx  # noqa: E402
from sluiced_fixture import ServerTestCase, q  # noqa: E402

ADMIN, TEAM_A, TEAM_B = "adm-secret-0123456789", "a-secret-0123456789", "b-secret-0123456789"
PERMS = ("read", "claim", "operate", "configure")
DASH = "dash-secret-0123456789"  # read: [""], every name

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
  - name: dash
    token: "%s"
    read: [""]
""" % (ADMIN, TEAM_A, TEAM_B, DASH) + "".join("""  - name: a-%s
    token: "%s-secret-0123456789"
    %s: ["team-a/", "tag/tenant=team-a", "group/team-a/"]
""" % (p, p, p) for p in PERMS)

# The callers, in the order of every row below: then one token per
# permission on team-a's namespace.
CALLERS = ("none", "wrong", "admin", "inside", "outside") + PERMS
TOKENS = {"none": "", "wrong": "not-a-token", "admin": ADMIN, "inside": TEAM_A,
          "outside": TEAM_B}
TOKENS.update({p: p + "-secret-0123456789" for p in PERMS})

# What a claim of each subject asks for (all inside team-a's namespace).
SUBJECTS = {
    "explicit": {"locks": [{"mutex": "team-a/deploy"}, {"semaphore": "team-a/db"}]},
    "tags": {"tags": {"tenant": "team-a"}},
    "group": {"group": "team-a/pr-1"},
    "pattern": {"locks": [{"semaphore": "team-a/pool/x", "slots": 2}]},
}

# Claim routes: status per caller, the same for every subject.
# A claim outside the token's prefixes is 404, word for word the answer for
# an id that does not exist (F8: a 403 told ids apart). In its read scope
# but without the permission it is 403 naming the permission (F7). The
# claim is team-a/owner's: under the claim token's prefixes, so its own.
CLAIM_ROUTES = {
    #                          none  wrong admin inside outside read claim operate configure
    "POST /v1/claims":        (401, 401, 201, 201, 403, 403, 201, 403, 403),
    "GET /v1/claims/ID":      (401, 401, 200, 200, 404, 200, 200, 200, 200),
    "GET /v1/claims/ID?wait": (401, 401, 200, 200, 404, 200, 200, 200, 200),
    "GET /v1/claims/ID/why":  (401, 401, 200, 200, 404, 200, 200, 200, 200),
    "POST /v1/claims/ID/renew": (401, 401, 200, 200, 404, 403, 200, 200, 403),
    "DELETE /v1/claims/ID":   (401, 401, 200, 200, 404, 403, 200, 200, 403),
    "POST /v1/claims/ID/cancel": (401, 401, 200, 200, 404, 403, 200, 200, 403),  # ended by then
}
ENDERS = ("admin", "inside", "claim", "operate")  # the callers that end team-a's claim

# Listings answer 200 to any known token; what they show is checked apart.
LISTINGS = {
    "GET /v1/claims":     (401, 401, 200, 200, 200, 200, 200, 200, 200),
    "GET /v1/queue":      (401, 401, 200, 200, 200, 200, 200, 200, 200),
    "GET /v1/semaphores": (401, 401, 200, 200, 200, 200, 200, 200, 200),
    "GET /v1/mutexes":    (401, 401, 200, 200, 200, 200, 200, 200, 200),
}

# Lock routes on team-a's names (an exact semaphore, a pattern, a semaphore
# made from the pattern, a tag semaphore, a mutex and a group mutex).
# Reading a lock needs read (operate and configure imply it; claim does
# not: on a shared lock the others' claims show in its holders); changing
# it, configure; clearing its queue, operate.
LOCK_ROUTES = {
    "GET /v1/semaphores/team-a/db":          (401, 401, 200, 200, 403, 200, 403, 200, 200),
    "PUT /v1/semaphores/team-a/db":          (401, 401, 200, 200, 403, 403, 403, 403, 200),
    "GET /v1/semaphores/team-a/pool/*":      (401, 401, 200, 200, 403, 200, 403, 200, 200),
    "PUT /v1/semaphores/team-a/pool/*":      (401, 401, 200, 200, 403, 403, 403, 403, 200),
    "GET /v1/semaphores/team-a/pool/x":      (401, 401, 200, 200, 403, 200, 403, 200, 200),
    "GET /v1/semaphores/tag/tenant=team-a":  (401, 401, 200, 200, 403, 200, 403, 200, 200),
    "GET /v1/mutexes/team-a/deploy":         (401, 401, 200, 200, 403, 200, 403, 200, 200),
    "GET /v1/mutexes/group/team-a/pr-1":     (401, 401, 200, 200, 403, 200, 403, 200, 200),
    "GET /v1/history?lock=mtx/team-a/deploy": (401, 401, 200, 200, 403, 200, 403, 200, 200),
    "PUT /v1/semaphores/team-a/scratch":     (401, 401, 200, 200, 403, 403, 403, 403, 200),
    "DELETE /v1/semaphores/team-a/scratch":  (401, 401, 204, 204, 403, 403, 403, 403, 204),
    "DELETE /v1/queue?lock=mtx/team-a/deploy": (401, 401, 200, 200, 403, 403, 403, 200, 403),
}

# The event log answers any known token, each its own events (checked in
# test_events_show_only_the_namespace); /metrics spans every namespace:
# admins only; /healthz needs no token; /v1/whoami tells any token itself.
GLOBAL_ROUTES = {
    "GET /v1/events":           (401, 401, 200, 200, 200, 200, 200, 200, 200),
    "GET /v1/events?wait":      (401, 401, 200, 200, 200, 200, 200, 200, 200),
    "GET /v1/events/stream":    (401, 401, 200, 200, 200, 200, 200, 200, 200),
    "GET /metrics":             (401, 401, 200, 403, 403, 403, 403, 403, 403),
    "GET /healthz":             (200, 200, 200, 200, 200, 200, 200, 200, 200),
    "GET /v1/whoami":           (401, 401, 200, 200, 200, 200, 200, 200, 200),
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
        if want == 403 and caller in PERMS and label != "GET /metrics":
            # In its scope but without the permission: the answer names it.
            self.assertRegex(r.json["error"]["message"],
                             r"(read|claim|operate|configure) permission", (label, caller))

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
                    want = "released" if caller in ENDERS else "held"
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
                    for c in shown:  # (the claim token's: holders under its prefixes)
                        self.assertEqual(c["id"] in text, caller not in ("outside",),
                                         "%s as %s: %s" % (route, caller, c["id"]))
                    if route == "GET /v1/semaphores":
                        names = [s["name"] for s in r.json["semaphores"]]
                        self.assertEqual("team-a/db" in names,
                                         caller not in ("outside", "claim"), names)
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

    def test_a_read_only_dashboard_token(self):
        """F7: read: [""] reads every name (both tenants' claims, locks and
        events) and may change nothing: every write is 403 naming the
        permission it lacks, and nothing changes."""
        a = self.new_claim("explicit")
        b = self.srv.post("/v1/claims", {"holder": "team-b/dash", "locks": [
            {"semaphore": "team-b/db"}]}, token=TEAM_B).json
        listed = {c["id"] for c in self.srv.get("/v1/claims", token=DASH).json["claims"]}
        self.assertLessEqual({a["id"], b["id"]}, listed)
        names = [x["name"] for x in self.srv.get("/v1/semaphores", token=DASH).json["semaphores"]]
        self.assertLessEqual({"team-a/db", "team-b/db"}, set(names))
        for path in ("/v1/claims/" + b["id"], "/v1/semaphores/team-b/db",
                     "/v1/history?lock=sem/team-b/db", "/v1/events?since=0", "/v1/queue"):
            self.assertEqual(self.srv.get(path, token=DASH).status, 200, path)
        writes = [
            ("POST", "/v1/claims", {"holder": "team-a/dash", "locks": [{"mutex": "team-a/d"}]},
             "claim"),
            ("POST", "/v1/claims/%s/renew" % b["id"], None, "operate"),
            ("POST", "/v1/claims/%s/cancel" % b["id"], None, "operate"),
            ("DELETE", "/v1/claims/" + b["id"], None, "operate"),
            ("DELETE", "/v1/claims?holder_prefix=team-b/", None, "claim"),
            ("PUT", "/v1/semaphores/team-b/db", {"limit": 1}, "configure"),
            ("DELETE", "/v1/semaphores/team-b/db", None, "configure"),
            ("DELETE", "/v1/queue?lock=sem/team-b/db", None, "operate"),
            ("DELETE", "/v1/queue?holder_prefix=team-b/", None, "operate"),
        ]
        for method, path, body, perm in writes:
            with self.subTest(method=method, path=path):
                r = self.srv.request(method, path, body=body, token=DASH)
                self.assertError(r, 403, "forbidden", contains=perm)
        self.assertEqual(self.srv.claim_get(b["id"])["state"], "held")
        self.assertEqual(self.srv.get("/v1/semaphores/team-b/db").json["limit"], 4)
        self.assertEqual(self.srv.get("/metrics", token=DASH).status, 403)
        me = self.srv.get("/v1/whoami", token=DASH).json
        self.assertEqual(me, {"name": "dash", "admin": False, "max_priority": None,
                              "permissions": {"read": [""], "claim": [], "operate": [],
                                              "configure": []}})
        for c in (a, b):
            self.srv.release(c["id"])

    def test_whoami_says_what_each_token_may_do(self):
        """The dashboard asks /v1/whoami to leave out what it would be refused;
        `prefixes` give every permission, operate and configure read too."""
        ns = ["team-a/", "tag/tenant=team-a", "group/team-a/"]
        want = {
            "admin": (True, {p: [""] for p in PERMS}),
            "inside": (False, {p: ns for p in PERMS}),
            "read": (False, {"read": ns, "claim": [], "operate": [], "configure": []}),
            "claim": (False, {"read": [], "claim": ns, "operate": [], "configure": []}),
            "operate": (False, {"read": ns, "claim": [], "operate": ns, "configure": []}),
        }
        for caller, (admin, perms) in want.items():
            with self.subTest(caller=caller):
                me = self.srv.get("/v1/whoami", token=TOKENS[caller]).json
                self.assertEqual((me["admin"], me["permissions"]), (admin, perms), me)

    def test_the_bearer_scheme_in_any_case_everywhere(self):
        """/healthz (sl_auth_identify) and the kept connection slots
        (sl_auth_admit) read "bearer" as the API does: the scheme is
        case-insensitive (RFC 9110 11.1); they compared it case-sensitively,
        so /healthz answered a valid token like no token at all."""
        for scheme in ("Bearer", "bearer", "BEARER"):
            with self.subTest(scheme=scheme):
                h = {"Authorization": "%s %s" % (scheme, TEAM_A)}
                r = self.srv.get("/healthz", headers=h, token="")
                self.assertIn("version", r.json, r)
                self.assertEqual(self.srv.get("/v1/whoami", headers=h, token="").status, 200)

    def test_healthz_details_need_a_token(self):
        """F14: without a valid token /healthz says only that the server serves
        and its role; a limited token adds the version and the counts; the
        store (a path, or a database host and user) is an admin's."""
        anyone = {"status", "role"}
        limited = anyone | {"version", "claims", "next_seq"}
        want = {"none": anyone, "wrong": anyone, "admin": limited | {"store"}}
        for caller in CALLERS:
            with self.subTest(caller=caller):
                r = self.srv.get("/healthz", token=TOKENS[caller])
                self.assertEqual(r.status, 200, r)
                got = set(r.json)
                if r.json["role"] != "leader":  # shared mode: the leader has the counts
                    got |= {"claims", "next_seq"} & want.get(caller, limited)
                if caller != "none" and caller != "wrong":  # shared mode's epoch
                    got.discard("epoch")
                if caller == "admin":  # shared mode: the servers' URLs
                    got -= {"leader", "self"}
                self.assertEqual(got, want.get(caller, limited), r.json)
                self.assertEqual(r.json["status"], "ok")
        # /v1/status gives a limited token the same, never the store
        self.assertNotIn("store", self.srv.get("/v1/status", token=TEAM_A).json)
        self.assertIn("store", self.srv.get("/v1/status", token=ADMIN).json)


SHARED_A, SHARED_B = "sa-secret-0123456789", "sb-secret-0123456789"
SHARED_FILE = """
tokens:
  - {name: admin, token: "%s", admin: true}
  - name: team-a
    token: "%s"
    prefixes: ["team-a/"]
    claim: ["shared/"]
    max_priority: 100
  - name: team-b
    token: "%s"
    prefixes: ["team-b/"]
    claim: ["shared/"]
    configure: ["shared/"]
semaphores:
  - {name: shared/runners, limit: %d, max_pending: 2}
  - {name: shared/admin-may, limit: 1}
"""


class TestSharedPrefix(ServerTestCase):
    """F7's reproduction: two tenants share the prefix shared/ and the file's
    semaphore shared/runners (limit 2, max_pending 2). With only the claim
    permission there, team-a may take a slot and nothing more: it neither
    sees, nor reconfigures, nor ends team-b's claims, jumps the queue or
    takes the semaphore away from the file. team-b also has configure on
    shared/, which still does not reach a semaphore the file manages."""
    CONFIG = SHARED_FILE % (ADMIN, SHARED_A, SHARED_B, 2)
    TOKEN = ADMIN
    RUNNERS = {"semaphore": "shared/runners"}

    def claim(self, token, holder, **fields):
        r = self.srv.post("/v1/claims", dict(fields, holder=holder, locks=[self.RUNNERS]),
                          token=token)
        self.assertEqual(r.status, 201, r)
        return r.json

    def setUp(self):
        # team-b holds both slots (job-1, job-2) and waits with job-3.
        self.b = [self.claim(SHARED_B, "team-b/job-%d" % i) for i in (1, 2, 3)]
        self.assertEqual([c["state"] for c in self.b], ["held", "held", "pending"])

    def tearDown(self):
        self.srv.delete("/v1/claims?holder_prefix=team-")
        self.assertEqual(self.runners()["limit"], 2)

    def runners(self):
        return self.srv.get("/v1/semaphores/shared/runners").json

    def states(self):
        return [self.srv.claim_get(c["id"])["state"] for c in self.b]

    def test_1_a_claim_only_token_lists_only_its_own_claims(self):
        mine = self.claim(SHARED_A, "team-a/job-1")
        r = self.srv.get("/v1/claims?lock=sem/shared/runners", token=SHARED_A)
        self.assertEqual([c["id"] for c in r.json["claims"]], [mine["id"]], r)
        r = self.srv.get("/v1/queue?lock=sem/shared/runners", token=SHARED_A)
        self.assertEqual([c["id"] for c in r.json["queue"]], [mine["id"]], r)
        r = self.srv.get("/v1/semaphores/shared/runners", token=SHARED_A)
        self.assertError(r, 403, "forbidden", contains="read permission")
        seen = {e["claim"] for e in self.srv.get("/v1/events?since=0", token=SHARED_A)
                .json["events"]}
        self.assertEqual(seen, {mine["id"]})
        self.assertEqual(self.srv.get("/v1/claims/" + self.b[0]["id"], token=SHARED_A).status,
                         404)

    def test_2_no_reconfiguring_the_shared_queue(self):
        r = self.srv.put("/v1/semaphores/shared/runners", {
            "limit": 2, "preempt": True, "preempt_grace": "0", "max_pending": 1,
            "on_full": "drop_oldest"}, token=SHARED_A)
        self.assertError(r, 403, "forbidden", contains="configure permission")
        self.claim(SHARED_A, "team-a/job-1")
        self.assertEqual(self.states(), ["held", "held", "pending"])

    def test_3_no_preempting_team_b(self):
        r = self.srv.put("/v1/semaphores/shared/runners", {"limit": 2, "preempt": True},
                         token=SHARED_A)
        self.assertError(r, 403, "forbidden", contains="configure permission")
        r = self.srv.post("/v1/claims", {"holder": "team-a/vip", "priority": 2147483647,
                                         "locks": [self.RUNNERS]}, token=SHARED_A)
        self.assertError(r, 403, "forbidden", contains="max_priority, 100")
        self.assertEqual(self.claim(SHARED_A, "team-a/vip", priority=100)["state"], "pending")
        self.assertEqual(self.states(), ["held", "held", "pending"])

    def test_4_no_cancel_or_release_of_team_b_s_claims(self):
        for route in ("POST /v1/claims/ID/cancel", "DELETE /v1/claims/ID",
                      "POST /v1/claims/ID/renew"):
            method, path = route.split(" ")
            r = self.srv.request(method, path.replace("ID", self.b[1]["id"]), token=SHARED_A)
            self.assertError(r, 404, "not_found")
        r = self.srv.delete("/v1/claims?holder_prefix=team-b/", token=SHARED_A)
        self.assertEqual(r.json["released"] + r.json["withdrawn"], 0, r)
        r = self.srv.delete("/v1/queue?lock=sem/shared/runners", token=SHARED_A)
        self.assertError(r, 403, "forbidden", contains="operate permission")
        # team-b may read team-a's claim (configure implies read), not end it.
        a = self.claim(SHARED_A, "team-a/job-1")
        r = self.srv.post("/v1/claims/%s/cancel" % a["id"], token=SHARED_B)
        self.assertError(r, 403, "forbidden", contains="operate permission")
        self.assertEqual(self.srv.claim_get(a["id"])["state"], "pending")
        self.assertEqual(self.states(), ["held", "held", "pending"])

    def test_5_no_backdating_past_team_b(self):
        r = self.srv.put("/v1/semaphores/shared/runners", {"limit": 2, "backdate": "8760h"},
                         token=SHARED_A)
        self.assertError(r, 403, "forbidden", contains="configure permission")
        r = self.srv.post("/v1/claims", {"holder": "team-a/early", "locks": [self.RUNNERS],
                                         "created": "2026-01-01T00:00:00Z"}, token=SHARED_A)
        self.assertError(r, 403, "forbidden")
        late = self.claim(SHARED_A, "team-a/late")
        queue = self.srv.get("/v1/queue?lock=sem/shared/runners").json["queue"]
        self.assertEqual([c["id"] for c in queue], [self.b[2]["id"], late["id"]])

    def test_6_no_starving_or_deleting(self):
        for body in ({"limit": 0},):
            r = self.srv.put("/v1/semaphores/shared/runners", body, token=SHARED_A)
            self.assertError(r, 403, "forbidden", contains="configure permission")
        r = self.srv.delete("/v1/semaphores/shared/runners", token=SHARED_A)
        self.assertError(r, 403, "forbidden", contains="configure permission")
        self.assertEqual(self.runners()["limit"], 2)

    def test_7_the_file_keeps_its_semaphore(self):
        """team-b may configure under shared/, but not the file's semaphore:
        a PUT would make it the API's for good, and the file's next values
        would not apply. Reloading a new limit still takes."""
        for method, body in (("PUT", {"limit": 0}), ("DELETE", None)):
            r = self.srv.request(method, "/v1/semaphores/shared/runners", body=body,
                                 token=SHARED_B)
            self.assertError(r, 403, "forbidden", contains="managed by the configuration file")
        self.assertEqual(self.srv.put("/v1/semaphores/shared/scratch", {"limit": 1},
                                      token=SHARED_B).status, 200)
        self.assertEqual(self.srv.delete("/v1/semaphores/shared/scratch",
                                         token=SHARED_B).status, 204)
        # An admin may (on another file semaphore, which becomes the API's).
        self.assertEqual(self.srv.put("/v1/semaphores/shared/admin-may", {"limit": 3}).status, 200)
        if fx.cluster_mode():
            return  # the file's semaphores are the leader's, a peer's: test_reload's part
        with open(self.srv.config_path, "w") as f:
            f.write(SHARED_FILE % (ADMIN, SHARED_A, SHARED_B, 3))
        self.srv.proc.send_signal(signal.SIGHUP)
        fx.wait_until(lambda: self.runners()["limit"] == 3, 10, what="the file's new limit")
        self.assertNotIn("semaphore shared/runners was last set through the API",
                         self.srv.stderr())
        with open(self.srv.config_path, "w") as f:
            f.write(self.CONFIG)
        self.srv.proc.send_signal(signal.SIGHUP)
        fx.wait_until(lambda: self.runners()["limit"] == 2, 10, what="the file's limit again")


if __name__ == "__main__":
    fx.main()
