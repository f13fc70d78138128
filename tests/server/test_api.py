#!/usr/bin/env python3
"""test_api.py - every endpoint and error code of docs/api.md, black box.

Runs a real sluiced (sluiced_fixture.py) and checks answers to the letter of
docs/api.md and docs/engine.md: semaphores and patterns, mutexes,
claims (held, pending, refused), tags and groups, long polls on claims and
events, renew, release, why, listings and the queue, the event log and its
server-sent stream, /healthz, /metrics, unknown paths and methods, bearer
tokens, and leases end to end. Waits are measured against what the server
reports (long polls, polling with a deadline), never fixed sleeps.
"""
import json
import re
import time
import urllib.parse

import sluiced_fixture as fx
from sluiced_fixture import ServerTestCase, q, wait_until

RFC3339_MS = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
STATES = {"pending", "held", "revoking", "released", "withdrawn", "expired", "timed_out",
          "superseded", "canceled"}


class ApiCase(ServerTestCase):
    def name(self, suffix=""):
        """A lock name of this test alone."""
        base = self._testMethodName
        return base + ("/" + suffix if suffix else "")

    def last_seq(self):
        evs = self.srv.all_events(0)
        return evs[-1]["seq"] if evs else 0

    def assertClaimShape(self, c):
        for key in ("id", "state", "holder", "locks", "priority", "created", "rebalance_key",
                    "tags", "group", "lease", "expires", "reason", "by"):
            self.assertIn(key, c)
        self.assertIn(c["state"], STATES)
        self.assertRegex(c["created"], RFC3339_MS)
        self.assertIsInstance(c["reason"], str)
        for lk in c["locks"]:
            self.assertEqual(set(lk), {"kind", "name", "slots", "token", "position"})
            if c["state"] == "pending":
                self.assertIsNone(lk["token"])
                self.assertIsInstance(lk["position"], int)
                self.assertGreaterEqual(lk["position"], 1)
            if c["state"] in ("held", "revoking"):
                self.assertIsInstance(lk["token"], int)
                self.assertIsNone(lk["position"])

    def tokens(self, c):
        return {(l["kind"], l["name"]): l["token"] for l in c["locks"]}


# ---------------------------------------------------------------------------
class TestSemaphores(ApiCase):
    """PUT/GET/DELETE /v1/semaphores, patterns, GET /v1/mutexes, listings."""

    def test_put_get_delete(self):
        """PUT answers 200 and the semaphore (defaults strict, lease "0"); GET
        reads the same; DELETE answers 204 with no body, then GET is 404."""
        n = self.name("db")
        r = self.srv.put("/v1/semaphores/" + n, {"limit": 3})
        self.assertEqual(r.status, 200, r)
        s = r.json
        self.assertEqual(s["kind"], "semaphore")
        self.assertEqual(s["name"], n)
        self.assertEqual(s["limit"], 3)
        self.assertEqual(s["strategy"], "strict")
        self.assertEqual(s["lease"], "0")
        self.assertIsNone(s["from_pattern"])
        self.assertEqual(s["used"], 0)
        self.assertIsInstance(s["token"], int)
        self.assertEqual(s["holders"], [])
        self.assertEqual(s["pending"], [])
        g = self.srv.get("/v1/semaphores/" + n)
        self.assertEqual(g.status, 200, g)
        self.assertEqual(g.json, s)
        d = self.srv.delete("/v1/semaphores/" + n)
        self.assertEqual(d.status, 204, d)
        self.assertEqual(d.body, b"")
        self.assertError(self.srv.get("/v1/semaphores/" + n), 404, "not_found")
        self.assertError(self.srv.delete("/v1/semaphores/" + n), 404, "not_found")

    def test_put_fields_and_change(self):
        """strategy and lease are stored and read back; a second PUT changes
        the limit; a lease may be a number of seconds."""
        n = self.name("pool")
        s = self.srv.sem_put(n, 2, strategy="skip", lease="30s")
        self.assertEqual((s["limit"], s["strategy"], s["lease"]), (2, "skip", "30s"))
        s = self.srv.sem_put(n, 5, strategy="rebalanced", lease=90)
        self.assertEqual((s["limit"], s["strategy"], s["lease"]), (5, "rebalanced", "1m30s"))
        s = self.srv.sem_put(n, 0)
        self.assertEqual((s["limit"], s["strategy"], s["lease"]), (0, "strict", "0"))

    def test_lowering_limit_revokes_nobody(self):
        """A limit lowered below used keeps every holder (docs/engine.md)."""
        n = self.name("s")
        self.srv.sem_put(n, 3)
        a = self.srv.claim("a", [("s", n, 2)])
        b = self.srv.claim("b", [("s", n, 1)])
        self.assertEqual((a["state"], b["state"]), ("held", "held"))
        s = self.srv.sem_put(n, 1)
        self.assertEqual((s["limit"], s["used"]), (1, 3))
        self.assertEqual([h["claim"] for h in s["holders"]], [a["id"], b["id"]])
        self.assertEqual(self.srv.claim_get(a["id"])["state"], "held")
        c = self.srv.claim("c", [("s", n, 1)])
        self.assertEqual(c["state"], "pending")
        for x in (a, b, c):
            self.srv.release(x["id"])

    def test_patterns(self):
        """A pattern configures every name under it (from_pattern names it);
        an exact name beats any pattern; the longest pattern wins; GET of the
        pattern itself answers; an unmatched unconfigured name is 404."""
        base = self.name()
        p = self.srv.sem_put(base + "/t/*", 2)
        self.assertEqual((p["name"], p["limit"]), (base + "/t/*", 2))
        self.assertEqual((p["holders"], p["pending"]), ([], []))
        self.srv.sem_put(base + "/t/long/*", 7)
        self.srv.sem_put(base + "/t/exact", 5)
        a = self.srv.get("/v1/semaphores/%s/t/a" % base).json
        self.assertEqual((a["limit"], a["from_pattern"], a["used"]), (2, base + "/t/*", 0))
        lg = self.srv.get("/v1/semaphores/%s/t/long/x" % base).json
        self.assertEqual((lg["limit"], lg["from_pattern"]), (7, base + "/t/long/*"))
        ex = self.srv.get("/v1/semaphores/%s/t/exact" % base).json
        self.assertEqual((ex["limit"], ex["from_pattern"]), (5, None))
        pat = self.srv.get("/v1/semaphores/%s/t/*" % base)
        self.assertEqual(pat.status, 200, pat)
        self.assertEqual(pat.json["limit"], 2)
        self.assertError(self.srv.get("/v1/semaphores/%s/u/a" % base), 404, "not_found")
        self.assertError(self.srv.get("/v1/semaphores/%s/u/*" % base), 404, "not_found")
        # Each name a pattern makes is its own semaphore of limit 2.
        c1 = self.srv.claim("h", [("s", base + "/t/a", 2)])
        c2 = self.srv.claim("h", [("s", base + "/t/b", 2)])
        self.assertEqual((c1["state"], c2["state"]), ("held", "held"))
        for c in (c1, c2):
            self.srv.release(c["id"])

    def test_listings(self):
        """GET /v1/semaphores lists configured semaphores and patterns, and a
        pattern-made semaphore only while it has holders or waiters; GET
        /v1/mutexes lists mutexes in use. Entries carry counts, not lists."""
        base = self.name()
        self.srv.sem_put(base + "/p/*", 1)
        self.srv.sem_put(base + "/fixed", 4)

        def sems():
            r = self.srv.get("/v1/semaphores")
            self.assertEqual(r.status, 200, r)
            return {e["name"]: e for e in r.json["semaphores"]}

        def mtxs():
            r = self.srv.get("/v1/mutexes")
            self.assertEqual(r.status, 200, r)
            return {e["name"]: e for e in r.json["mutexes"]}

        s = sems()
        self.assertIn(base + "/p/*", s)
        self.assertIn(base + "/fixed", s)
        self.assertNotIn(base + "/p/x", s)
        self.assertEqual(s[base + "/fixed"]["holders_count"], 0)
        self.assertNotIn("holders", s[base + "/fixed"])
        self.assertNotIn(base + "/m", mtxs())
        h = self.srv.claim("h", [("s", base + "/p/x"), ("m", base + "/m")])
        w = self.srv.claim("w", [("s", base + "/p/x"), ("m", base + "/m")])
        s, m = sems(), mtxs()
        e = s[base + "/p/x"]
        self.assertEqual((e["holders_count"], e["pending_count"], e["used"]), (1, 1, 1))
        self.assertEqual(e["from_pattern"], base + "/p/*")
        self.assertNotIn("pending", e)
        self.assertEqual((m[base + "/m"]["holders_count"], m[base + "/m"]["pending_count"]),
                         (1, 1))
        self.assertEqual(m[base + "/m"]["kind"], "mutex")
        names = [e["name"] for e in self.srv.get("/v1/mutexes").json["mutexes"]]
        self.assertEqual(names, sorted(names))
        self.srv.release(w["id"])
        self.srv.release(h["id"])
        self.assertNotIn(base + "/p/x", sems())
        self.assertNotIn(base + "/m", mtxs())

    def test_delete_in_use_conflict(self):
        """DELETE is 409 conflict while the semaphore has holders, and while
        it has only waiters; 204 once it is idle."""
        n = self.name("s")
        self.srv.sem_put(n, 1)
        h = self.srv.claim("h", [("s", n)])
        self.assertError(self.srv.delete("/v1/semaphores/" + n), 409, "conflict")
        self.srv.sem_put(n, 0)
        self.srv.release(h["id"])
        w = self.srv.claim("w", [("s", n)])
        self.assertEqual(w["state"], "pending")
        self.assertError(self.srv.delete("/v1/semaphores/" + n), 409, "conflict")
        self.assertEqual(self.srv.get("/v1/semaphores/" + n).json["pending"][0]["claim"],
                         w["id"])
        self.srv.release(w["id"])
        self.assertEqual(self.srv.delete("/v1/semaphores/" + n).status, 204)

    def test_mutex_every_name_answers(self):
        """GET /v1/mutexes/{name} answers for any valid name, used or not."""
        n = self.name("never/used")
        r = self.srv.get("/v1/mutexes/" + n)
        self.assertEqual(r.status, 200, r)
        m = r.json
        self.assertEqual((m["kind"], m["name"], m["limit"], m["used"]), ("mutex", n, 1, 0))
        self.assertEqual((m["holders"], m["pending"]), ([], []))
        self.assertIsNone(m["from_pattern"])
        self.assertIsInstance(m["token"], int)

    def test_percent_encoded_slash(self):
        """%2F in a URL is accepted for '/'."""
        n = self.name("a/b")
        self.srv.sem_put(n, 2)
        r = self.srv.get("/v1/semaphores/" + n.replace("/", "%2F"))
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json["name"], n)
        r = self.srv.get("/v1/mutexes/" + urllib.parse.quote(n, safe=""))
        self.assertEqual((r.status, r.json["name"]), (200, n))

    def test_bad_names(self):
        """Names: 1 to 253 of the allowed characters, no leading or trailing
        '/', no '//'; '*' only at the end of a semaphore pattern. 400."""
        for bad in ("/lead", "trail/", "a//b", "sp%20ace", "uni%C3%A9", "x" * 254, "st*ar",
                    "q%3Fmark"):
            for method, path in (("PUT", "/v1/semaphores/"), ("GET", "/v1/semaphores/"),
                                 ("DELETE", "/v1/semaphores/"), ("GET", "/v1/mutexes/")):
                body = {"limit": 1} if method == "PUT" else None
                r = self.srv.request(method, path + bad, body=body)
                self.assertError(r, 400, "bad_request")
        self.assertError(self.srv.get("/v1/mutexes/pat*"), 400, "bad_request")
        self.assertEqual(self.srv.sem_put("x" * 253, 1)["name"], "x" * 253)
        self.assertEqual(self.srv.delete("/v1/semaphores/" + "x" * 253).status, 204)

    def test_bad_bodies(self):
        """limit, strategy and lease are checked; unknown fields and bodies that
        are not one JSON object are refused; nothing is configured."""
        n = self.name("s")
        for body in ({"limit": -1}, {"limit": "3"}, {"limit": 1.5}, {"limit": 1000000001},
                     {"limit": None}, {}, {"limit": 1, "strategy": "fast"},
                     {"limit": 1, "strategy": 3}, {"limit": 1, "lease": "5x"},
                     {"limit": 1, "lease": -5}, {"limit": 1, "lease": True},
                     {"limit": 1, "lease": "1d"}, {"limit": 1, "extra": 1},
                     {"limit": 1, "Limit": 2}, [1]):
            r = self.srv.put("/v1/semaphores/" + n, body)
            self.assertError(r, 400, "bad_request")
        for raw in (b"", b"{", b'{"limit": 1,}', b"null", b'{"limit":1}{"limit":2}',
                    b'{"limit":1,"limit":2}'):
            self.assertError(self.srv.put("/v1/semaphores/" + n, raw=raw), 400, "bad_request")
        self.assertError(self.srv.get("/v1/semaphores/" + n), 404, "not_found")
        self.assertEqual(self.srv.sem_put(n, 1000000000)["limit"], 1000000000)


    def test_skip_overtake_limit(self):
        """A skip semaphore's first waiter is passed by smaller claims until it
        has waited its overtake_limit; then the slots it asks for are kept for
        it, and why says so. The setting is shown and survives a restart."""
        name = self.name("runs")
        r = self.srv.put("/v1/semaphores/" + q(name),
                         {"limit": 2, "strategy": "skip", "overtake_limit": "300ms"})
        self.assertEqual((r.status, r.json["overtake_limit"]), (200, "300ms"), r)
        self.assertError(self.srv.put("/v1/semaphores/" + q(self.name("strict")),
                                      {"limit": 2, "overtake_limit": "1s"}), 400, "bad_request",
                         "skip strategy only")
        strict = self.srv.sem_put(self.name("plain"), 1)
        self.assertNotIn("overtake_limit", strict)
        h = self.srv.claim("h", [("s", name, 1)])
        big = self.srv.claim("big", [("s", name, 2)])
        self.assertEqual(big["state"], "pending")
        # Small claims pass big until it has waited 300ms; then they wait.
        passed = []

        def small_waits():
            c = self.srv.claim("small", [("s", name, 1)])
            if c["state"] == "held":
                passed.append(c["id"])
                self.srv.release(c["id"])
                return None
            return c
        small = wait_until(small_waits, 10.0, poll_s=0.02, what="the overtake limit")
        self.assertIn("kept for the first claim", small["reason"])
        self.srv.restart()
        self.assertEqual(self.srv.get("/v1/semaphores/" + q(name)).json["overtake_limit"],
                         "300ms")
        self.srv.release(h["id"])
        self.assertEqual(self.srv.claim_get(big["id"])["state"], "held")
        self.assertEqual(self.srv.claim_get(small["id"])["state"], "pending")
        self.srv.release(big["id"])
        self.assertEqual(self.srv.claim_get(small["id"])["state"], "held")
        self.srv.release(small["id"])


# ---------------------------------------------------------------------------
class TestClaims(ApiCase):
    """POST /v1/claims and the claim it answers; GET, DELETE, renew."""

    def test_held_at_once(self):
        """A free lock: 201, Location /v1/claims/{id}, held, a token per lock,
        position null; the id is long and random; GET Location reads it."""
        n = self.name("m")
        r = self.srv.post("/v1/claims", {"holder": "wf-1", "locks": [{"mutex": n}]})
        self.assertEqual(r.status, 201, r)
        c = r.json
        self.assertClaimShape(c)
        self.assertEqual(r.headers.get("location"), "/v1/claims/" + c["id"])
        self.assertEqual(c["state"], "held")
        self.assertEqual(c["holder"], "wf-1")
        self.assertEqual(len(c["locks"]), 1)
        lk = c["locks"][0]
        self.assertEqual((lk["kind"], lk["name"], lk["slots"]), ("mutex", n, 1))
        self.assertGreaterEqual(lk["token"], 1)
        self.assertEqual((c["priority"], c["tags"], c["group"], c["by"]), (0, {}, None, None))
        self.assertEqual((c["lease"], c["expires"]), ("0", None))
        self.assertGreaterEqual(len(c["id"]), 16)
        g = self.srv.get(r.headers["location"])
        self.assertEqual(g.status, 200, g)
        self.assertEqual((g.json["id"], g.json["state"]), (c["id"], "held"))
        self.assertEqual(self.tokens(g.json), self.tokens(c))
        other = self.srv.claim("wf-2", [("m", self.name("other"))])
        self.assertNotEqual(other["id"], c["id"])
        self.srv.release(c["id"])
        self.srv.release(other["id"])

    def test_pending_positions(self):
        """Waiters are pending with their place in each lock's queue; the
        lock reads holders oldest first and pending in queue order."""
        m, s = self.name("m"), self.name("s")
        self.srv.sem_put(s, 3)
        a = self.srv.claim("a", [("m", m), ("s", s, 3)])
        b = self.srv.claim("b", [("m", m)])
        c = self.srv.claim("c", [("m", m), ("s", s, 2)])
        d = self.srv.claim("d", [("s", s, 1)])
        self.assertEqual(a["state"], "held")
        for x in (b, c, d):
            self.assertClaimShape(x)
            self.assertEqual(x["state"], "pending")
            self.assertTrue(x["reason"])
        self.assertEqual([l["position"] for l in b["locks"]], [1])
        self.assertEqual([l["position"] for l in c["locks"]], [2, 1])
        self.assertEqual([l["position"] for l in d["locks"]], [2])
        self.assertEqual([l["slots"] for l in c["locks"]], [1, 2])
        lm = self.srv.get("/v1/mutexes/" + m).json
        self.assertEqual([h["claim"] for h in lm["holders"]], [a["id"]])
        self.assertEqual(lm["holders"][0]["holder"], "a")
        self.assertEqual(lm["holders"][0]["token"], a["locks"][0]["token"])
        self.assertRegex(lm["holders"][0]["since"], RFC3339_MS)
        self.assertEqual([(p["claim"], p["position"]) for p in lm["pending"]],
                         [(b["id"], 1), (c["id"], 2)])
        ls = self.srv.get("/v1/semaphores/" + s).json
        self.assertEqual((ls["used"], ls["holders"][0]["slots"]), (3, 3))
        self.assertEqual([(p["claim"], p["slots"], p["position"]) for p in ls["pending"]],
                         [(c["id"], 2, 1), (d["id"], 1, 2)])
        for x in (d, c, b, a):
            self.srv.release(x["id"])

    def test_release_lets_next_in_before_answering(self):
        """After DELETE answers, the claims it let in already hold (docs/api.md:
        effects are immediate), with the next fencing token."""
        m = self.name("m")
        a = self.srv.claim("a", [("m", m)])
        b = self.srv.claim("b", [("m", m)])
        c = self.srv.claim("c", [("m", m)])
        fin = self.srv.release(a["id"])
        self.assertEqual(fin["state"], "released")
        gb = self.srv.claim_get(b["id"])
        self.assertEqual(gb["state"], "held")
        self.assertEqual(gb["locks"][0]["token"], a["locks"][0]["token"] + 1)
        self.assertEqual(self.srv.claim_get(c["id"])["locks"][0]["position"], 1)
        self.srv.release(b["id"])
        self.assertEqual(self.srv.claim_get(c["id"])["locks"][0]["token"],
                         a["locks"][0]["token"] + 2)
        self.srv.release(c["id"])

    def test_unknown_semaphore_422(self):
        """A semaphore with neither configuration nor pattern: 422
        unknown_semaphore naming it; nothing is created."""
        n = self.name("nosuch/sem")
        r = self.srv.post("/v1/claims", {"holder": "u422", "locks": [
            {"mutex": self.name("m")}, {"semaphore": n}]})
        self.assertError(r, 422, "unknown_semaphore", contains=n)
        self.assertEqual(self.srv.get("/v1/claims?holder=u422").json["claims"], [])
        self.assertEqual(self.srv.get("/v1/mutexes/" + self.name("m")).json["used"], 0)

    def test_refused_400(self):
        """Claims that could never be granted and malformed bodies: 400
        bad_request, and no claim is made."""
        s, m = self.name("s"), self.name("m")
        self.srv.sem_put(s, 2)
        H = "bad400"
        bodies = [
            {"holder": H, "locks": [{"mutex": m}, {"mutex": m}]},  # the same lock twice
            {"holder": H, "locks": [{"semaphore": s}, {"semaphore": s, "slots": 1}]},
            {"holder": H, "locks": [{"mutex": m, "slots": 2}]},  # mutex slots above 1
            {"holder": H, "locks": [{"semaphore": s, "slots": 3}]},  # above the limit
            {"holder": H, "locks": [{"mutex": m}], "cancel": "pending"},  # cancel w/o group
            {"holder": H, "locks": [{"mutex": m}], "cancel": "in-progress"},
            {"holder": H},  # no lock, tag or group
            {"holder": H, "locks": []},
            {"holder": H, "locks": [], "tags": {}},
            {"locks": [{"mutex": m}]},  # no holder
            {"holder": 7, "locks": [{"mutex": m}]},
            {"holder": None, "locks": [{"mutex": m}]},
            {"holder": H, "locks": {"mutex": m}},
            {"holder": H, "locks": "m"},
            {"holder": H, "locks": [m]},
            {"holder": H, "locks": [{"name": m}]},
            {"holder": H, "locks": [{"mutex": m, "semaphore": s}]},
            {"holder": H, "locks": [{"mutex": 5}]},
            {"holder": H, "locks": [{"semaphore": s, "slots": "2"}]},
            {"holder": H, "locks": [{"semaphore": s, "slots": 0}]},
            {"holder": H, "locks": [{"semaphore": s, "slots": -1}]},
            {"holder": H, "locks": [{"semaphore": s, "slots": 1.5}]},
            {"holder": H, "locks": [{"mutex": m, "extra": True}]},
            {"holder": H, "locks": [{"mutex": m}], "priority": "high"},
            {"holder": H, "locks": [{"mutex": m}], "priority": 1.5},
            {"holder": H, "locks": [{"mutex": m}], "priority": 2 ** 31},
            {"holder": H, "locks": [{"mutex": m}], "tags": ["env"]},
            {"holder": H, "locks": [{"mutex": m}], "tags": {"env": 1}},
            {"holder": H, "locks": [{"mutex": m}], "tags": {"a=b": "c"}},
            {"holder": H, "locks": [{"mutex": m}], "group": 3},
            {"holder": H, "locks": [{"mutex": m}], "rebalance_key": 3},
            {"holder": H, "group": "g", "cancel": "all"},
            {"holder": H, "lokcs": [{"mutex": m}]},  # unknown field
            {"holder": H, "locks": [{"mutex": m}], "Wait": "1s"},
            {"holder": H, "locks": [{"mutex": m}], "lease": "5x"},
            {"holder": H, "locks": [{"mutex": m}], "lease": True},
            {"holder": H, "locks": [{"mutex": m}], "lease": -1},
            {"holder": H, "locks": [{"mutex": m}], "timeout": "-1s"},
            {"holder": H, "locks": [{"mutex": m}], "grace": "abc"},
            {"holder": H, "locks": [{"mutex": m}], "wait": "1d"},
            {"holder": H, "locks": [{"mutex": m}], "wait": "30 s"},
            {"holder": H, "locks": [{"mutex": m}], "created": "yesterday"},
            {"holder": H, "locks": [{"mutex": m}], "created": 1700000000},
            {"holder": H, "locks": [{"mutex": m}], "created": "2026-11-22T10:00:00"},
            {"holder": H, "locks": [{"mutex": "a//b"}]},
            {"holder": H, "locks": [{"mutex": "/a"}]},
            {"holder": H, "locks": [{"mutex": "pat*"}]},
            {"holder": H, "locks": [{"semaphore": s + "*"}]},
            {"holder": H, "locks": [{"mutex": ""}]},
            {"holder": "", "locks": [{"mutex": m}]},
            {"holder": "h" * 254, "locks": [{"mutex": m}]},
            [{"holder": H}],
        ]
        for body in bodies:
            r = self.srv.post("/v1/claims", body)
            self.assertError(r, 400, "bad_request")
            self.assertNotIn("location", r.headers)
        for raw in (b"", b"{", b'{"holder":', b"[]", b"null", b"42", b'"x"',
                    b'{"holder":"bad400","holder":"x","locks":[{"mutex":"m"}]}',
                    b'{"holder":"bad400","locks":[{"mutex":"m"}]} trailing'):
            self.assertError(self.srv.post("/v1/claims", raw=raw), 400, "bad_request")
        self.assertEqual(self.srv.get("/v1/claims?holder=" + H).json["claims"], [])
        self.assertEqual(self.srv.get("/v1/mutexes/" + m).json["used"], 0)

    def test_durations_and_created(self):
        """Durations as strings or seconds; created is kept as given and
        orders the queue; lease "0" is none."""
        m = self.name("m")
        c = self.srv.claim("h", [("m", m)], lease="1m30s", timeout=5, grace="0",
                           created="2099-11-22T10:00:00.000Z", priority=-3,
                           rebalance_key="k1", tags={"env": "prod"})
        self.assertEqual(c["lease"], "1m30s")
        self.assertEqual(c["created"], "2099-11-22T10:00:00.000Z")
        self.assertEqual((c["priority"], c["rebalance_key"], c["tags"]), (-3, "k1",
                                                                          {"env": "prod"}))
        self.assertRegex(c["expires"], RFC3339_MS)
        d = self.srv.claim("h", [("m", self.name("n"))], lease=0.25)
        self.assertEqual(d["lease"], "250ms")
        e = self.srv.claim("h", [("m", self.name("o"))], lease="0")
        self.assertEqual((e["lease"], e["expires"]), ("0", None))
        for x in (c, d, e):
            self.srv.release(x["id"])

    def test_paused_semaphore_accepts_big_claims(self):
        """Limit 0 pauses: any slots are accepted and wait (engine.md)."""
        s = self.name("s")
        self.srv.sem_put(s, 0)
        c = self.srv.claim("h", [("s", s, 5)])
        self.assertEqual(c["state"], "pending")
        self.assertIn("paused", c["reason"])
        self.srv.sem_put(s, 5)
        self.assertEqual(self.srv.claim_get(c["id"])["state"], "held")
        self.srv.release(c["id"])

    def test_delete(self):
        """DELETE: 200 and the final claim (released / withdrawn); again the
        same answer; an unknown id is 404."""
        m = self.name("m")
        a = self.srv.claim("a", [("m", m)])
        b = self.srv.claim("b", [("m", m)])
        fb = self.srv.release(b["id"])
        self.assertEqual(fb["state"], "withdrawn")
        self.assertRegex(fb["reason"], "withdr")
        fa = self.srv.release(a["id"])
        self.assertEqual(fa["state"], "released")
        self.assertEqual(fa["locks"][0]["token"], a["locks"][0]["token"])
        again = self.srv.release(a["id"])
        self.assertEqual(again, fa)
        self.assertEqual(self.srv.release(b["id"]), fb)
        self.assertEqual(self.srv.claim_get(a["id"]), fa)
        self.assertError(self.srv.delete("/v1/claims/NoSuchClaimId123"), 404, "not_found")
        self.assertError(self.srv.get("/v1/claims/NoSuchClaimId123"), 404, "not_found")
        self.assertError(self.srv.post("/v1/claims/NoSuchClaimId123/renew"), 404, "not_found")
        self.assertError(self.srv.get("/v1/claims/NoSuchClaimId123/why"), 404, "not_found")
        self.assertError(self.srv.get("/v1/claims/" + "x" * 65), 404, "not_found")

    def test_renew(self):
        """Renew: 200 and the claim with a later expiry; 409 with the claim
        once it has ended; pending claims renew too."""
        m = self.name("m")
        a = self.srv.claim("a", [("m", m)], lease="30s")
        b = self.srv.claim("b", [("m", m)], lease="30s")
        r = self.srv.post("/v1/claims/%s/renew" % a["id"])
        self.assertEqual(r.status, 200, r)
        self.assertEqual((r.json["id"], r.json["state"]), (a["id"], "held"))
        self.assertGreaterEqual(r.json["expires"], a["expires"])
        rb = self.srv.post("/v1/claims/%s/renew" % b["id"])
        self.assertEqual((rb.status, rb.json["state"]), (200, "pending"))
        self.srv.release(a["id"])
        r = self.srv.post("/v1/claims/%s/renew" % a["id"])
        self.assertError(r, 409, "conflict")
        self.assertEqual(r.json["claim"]["id"], a["id"])
        self.assertEqual(r.json["claim"]["state"], "released")
        self.srv.release(b["id"])

    def test_tags(self):
        """Tag k=v adds semaphore tag/k=v when a pattern tag/k=* is configured,
        and tag/k when that is; tags that add nothing leave a claim of no
        locks, granted at once."""
        self.srv.sem_put("tag/tenv=*", 1)
        self.srv.sem_put("tag/tenv", 3)
        a = self.srv.claim("a", tags={"tenv": "prod"})
        self.assertEqual(a["state"], "held")
        self.assertEqual([(l["kind"], l["name"], l["slots"]) for l in a["locks"]],
                         [("semaphore", "tag/tenv=prod", 1), ("semaphore", "tag/tenv", 1)])
        b = self.srv.claim("b", [("m", self.name("m"))], tags={"tenv": "prod"})
        self.assertEqual(b["state"], "pending")
        self.assertEqual([l["name"] for l in b["locks"]],
                         [self.name("m"), "tag/tenv=prod", "tag/tenv"])
        c = self.srv.claim("c", tags={"tenv": "dev"})
        self.assertEqual(c["state"], "held")
        # tag/tenv: 2 of 3 used and b (pending, blocked on tag/tenv=prod) keeps
        # its place ahead (strict), so d waits behind it.
        d = self.srv.claim("d", tags={"tenv": "qa"})
        self.assertEqual(d["state"], "pending")
        self.assertEqual(d["locks"][0]["position"], 1)
        self.assertEqual(d["locks"][1]["position"], 2)
        why = {e["lock"]: e["rule"] for e in
               self.srv.get("/v1/claims/%s/why" % d["id"]).json["reasons"]}
        self.assertEqual(why, {"sem/tag/tenv=qa": "other_lock", "sem/tag/tenv": "behind"})
        free = self.srv.claim("e", tags={"tcolour": "red"})
        self.assertEqual((free["state"], free["locks"]), ("held", []))
        self.srv.release(a["id"])
        self.assertEqual(self.srv.claim_get(b["id"])["state"], "held")
        for x in (b, c, d, free):
            self.srv.release(x["id"])

    def test_group_cancel_pending(self):
        """cancel: pending supersedes the group's earlier waiters (by names the
        new claim); holders keep their locks."""
        g = self.name("g")
        a = self.srv.claim("a", group=g)
        self.assertEqual(a["state"], "held")
        self.assertEqual([(l["kind"], l["name"]) for l in a["locks"]], [("mutex", "group/" + g)])
        self.assertEqual(a["group"], g)
        b = self.srv.claim("b", group=g)
        self.assertEqual(b["state"], "pending")
        c = self.srv.claim("c", group=g, cancel="pending")
        self.assertEqual(c["state"], "pending")
        self.assertEqual(c["locks"][0]["position"], 1)
        gb = self.srv.claim_get(b["id"])
        self.assertEqual((gb["state"], gb["by"]), ("superseded", c["id"]))
        self.assertIn(c["id"], gb["reason"])
        self.assertEqual(self.srv.claim_get(a["id"])["state"], "held")
        self.srv.release(a["id"])
        self.assertEqual(self.srv.claim_get(c["id"])["state"], "held")
        self.srv.release(c["id"])

    def test_group_cancel_in_progress_grace0(self):
        """cancel: in-progress with grace 0 cancels the holder at once, so the
        new claim is held in the same response; the waiter is superseded."""
        g = self.name("g")
        a = self.srv.claim("a", group=g)
        b = self.srv.claim("b", group=g)
        since = self.last_seq()
        c = self.srv.claim("c", group=g, cancel="in-progress", grace="0")
        self.assertEqual(c["state"], "held")
        self.assertEqual(c["locks"][0]["token"], a["locks"][0]["token"] + 1)
        ga, gb = self.srv.claim_get(a["id"]), self.srv.claim_get(b["id"])
        self.assertEqual((ga["state"], ga["by"]), ("canceled", c["id"]))
        self.assertEqual((gb["state"], gb["by"]), ("superseded", c["id"]))
        types = [(e["type"], e["claim"]) for e in self.srv.all_events(since)]
        self.assertEqual(types[0], ("claim.queued", c["id"]))
        self.assertEqual(types[-1], ("claim.acquired", c["id"]))
        self.assertIn(("claim.superseded", b["id"]), types)
        self.assertIn(("claim.canceled", a["id"]), types)
        r = self.srv.post("/v1/claims/%s/renew" % a["id"])
        self.assertError(r, 409, "conflict")
        self.assertEqual(r.json["claim"]["state"], "canceled")
        self.srv.release(c["id"])

    def test_group_revoking_with_grace(self):
        """With a grace the holder is revoking (keeps its slots, by = the new
        claim); renew is 409 carrying the claim; releasing it ends it
        canceled and lets the new claim in at once."""
        g = self.name("g")
        a = self.srv.claim("a", group=g, lease="30s")
        since = self.last_seq()
        c = self.srv.claim("c", group=g, cancel="in-progress", grace="30s")
        self.assertEqual(c["state"], "pending")
        ga = self.srv.claim_get(a["id"])
        self.assertEqual((ga["state"], ga["by"]), ("revoking", c["id"]))
        self.assertEqual(ga["locks"][0]["token"], a["locks"][0]["token"])
        self.assertEqual([(e["type"], e["claim"]) for e in self.srv.all_events(since)],
                         [("claim.queued", c["id"]), ("claim.revoking", a["id"]),
                          ("claim.waiting", c["id"])])
        r = self.srv.post("/v1/claims/%s/renew" % a["id"])
        self.assertError(r, 409, "conflict")
        self.assertIn("claim", r.json)
        self.assertEqual(r.json["claim"]["state"], "revoking")
        fin = self.srv.release(a["id"])
        self.assertEqual((fin["state"], fin["by"]), ("canceled", c["id"]))
        self.assertEqual(self.srv.claim_get(c["id"])["state"], "held")
        self.srv.release(c["id"])

    def test_claim_answer_bytes_match_listing(self):
        """Claim answers are written without jansson (json_claim.c): byte for
        byte what jansson writes for the same claim inside a listing, for
        every shape of claim (pending with positions, held with tokens,
        revoking, ended, a holder needing escapes, tags, groups)."""
        g, m, s = self.name("g"), self.name("m"), self.name("s")
        self.srv.sem_put(s, 4)
        tags = {"team": "a/b", "env": "prod:eu=1", "empty.-_": "x"}
        holder = 'h"1\\ caf\u00e9 \U0001F600 </x>'
        ids = [
            self.srv.claim(holder, [("m", m), ("s", s, 3)], priority=-5, tags=tags,
                           rebalance_key="team/a", lease="90s", timeout="1500ms")["id"],
            self.srv.claim("w1", [("m", m), ("s", s, 2)], priority=7)["id"],
            self.srv.claim("g1", group=g, lease="30s")["id"],
            self.srv.claim("g2", group=g, cancel="in-progress", grace="1h")["id"],
        ]
        ended = self.srv.claim("e", [("m", self.name("e"))])["id"]
        self.srv.release(ended)
        ids.append(ended)
        listing = self.srv.get("/v1/claims")
        self.assertEqual(listing.status, 200, listing)
        states = set()
        for cid in ids:
            r = self.srv.get("/v1/claims/" + cid)
            self.assertEqual(r.status, 200, r)
            self.assertTrue(r.body.endswith(b"}\n"), r.body)
            self.assertIn(r.body[:-1], listing.body, cid)
            states.add(r.json["state"])
        self.assertEqual(states, {"held", "pending", "revoking", "released"})
        for cid in ids:
            self.srv.delete("/v1/claims/" + cid)

    def test_group_later_claim_left_alone(self):
        """cancel only reaches claims that come before the new one in created
        order: an older re-run waits instead (engine.md)."""
        g = self.name("g")
        a = self.srv.claim("a", group=g, created="2099-01-01T00:00:02.000Z")
        old = self.srv.claim("old", group=g, cancel="in-progress", grace="0",
                             created="2099-01-01T00:00:01.000Z")
        self.assertEqual(old["state"], "pending")
        self.assertEqual(self.srv.claim_get(a["id"])["state"], "held")
        self.srv.release(old["id"])
        self.srv.release(a["id"])


# ---------------------------------------------------------------------------
class TestWaits(ApiCase):
    """Long polls: POST ?wait, GET /v1/claims/{id}?wait&seen."""

    def test_get_wait_wakes_on_release(self):
        """A parked GET ?wait answers within 1 s of the release that lets its
        claim in, with state held."""
        m = self.name("m")
        a = self.srv.claim("a", [("m", m)])
        b = self.srv.claim("b", [("m", m)])
        conn, resp = self.srv.start_request("GET", "/v1/claims/%s?wait=20s&seen=pending"
                                            % b["id"])
        try:
            self.assertEqual(resp.status, 200)  # headers first: the wait is parked
            self.srv.release(a["id"])
            t0 = time.monotonic()
            got = json.loads(resp.read())
            dt = time.monotonic() - t0
        finally:
            conn.close()
        self.assertEqual(got["state"], "held")
        self.assertLess(dt, 1.0, "the wait answered %.3f s after the release" % dt)
        self.srv.release(b["id"])

    def test_get_wait_without_change(self):
        """With nothing happening, a wait answers after about the wait, with
        the same state."""
        m = self.name("m")
        a = self.srv.claim("a", [("m", m)])
        b = self.srv.claim("b", [("m", m)])
        t0 = time.monotonic()
        got = self.srv.claim_get(b["id"], "?wait=700ms")
        dt = time.monotonic() - t0
        self.assertEqual(got["state"], "pending")
        self.assertGreaterEqual(dt, 0.65)
        self.assertLess(dt, 3.0)
        t0 = time.monotonic()
        self.assertEqual(self.srv.claim_get(a["id"], "?wait=0.3")["state"], "held")
        self.assertGreaterEqual(time.monotonic() - t0, 0.25)
        self.srv.release(b["id"])
        self.srv.release(a["id"])

    def test_claims_newest_first(self):
        """order=newest lists claims newest first, a page at a time (the
        cursor resumes before the last claim shown, even once it is gone);
        order=oldest is the default; with lock= it is refused."""
        m = self.name("m")
        made = [self.srv.claim("nf-%02d" % i, [("m", m)]) for i in range(7)]
        ids = [c["id"] for c in made]
        whole = [x["id"] for x in self.srv.get("/v1/claims?order=newest").json["claims"]]
        mine = [i for i in whole if i in ids]
        self.assertEqual(mine, list(reversed(ids)))
        oldest = [x["id"] for x in self.srv.get("/v1/claims?order=oldest").json["claims"]]
        self.assertEqual([i for i in oldest if i in ids], ids)
        paged, after = [], None
        while True:
            body = self.srv.get("/v1/claims?order=newest&limit=2%s" % (
                "&after=" + q(after) if after else "")).json
            paged += [x["id"] for x in body["claims"]]
            after = body.get("next")
            if not after:
                break
        self.assertEqual(paged, whole)
        # The cursor resumes in place when the claim a page ended on is gone.
        first = self.srv.get("/v1/claims?order=newest&limit=3").json
        self.srv.release(first["claims"][-1]["id"])
        rest = self.srv.get("/v1/claims?order=newest&limit=2&after=" + q(first["next"])).json
        self.assertEqual([x["id"] for x in rest["claims"]], whole[3:5])
        self.assertError(self.srv.get("/v1/claims?order=up"), 400, "bad_request")
        self.assertError(self.srv.get("/v1/claims?order=newest&lock=mtx/" + q(m)), 400,
                         "bad_request")
        for c in made:
            self.srv.release(c["id"])

    def test_events_of_a_run(self):
        """/v1/events?run=RUN: the events of holder RUN's and RUN/...'s
        claims only, in pages; not with claim= or wait=."""
        run = self.name("run")
        m = self.name("m")
        a = self.srv.claim(run + "/build", [("m", m)])
        other = self.srv.claim(run + "x/build", [("m", m)])
        b = self.srv.claim(run + "/test", [("m", m)])
        self.srv.release(a["id"])
        got = self.srv.get("/v1/events?run=" + q(run)).json
        claims = [e["claim"] for e in got["events"]]
        self.assertEqual(set(claims), {a["id"], b["id"]})
        self.assertNotIn(other["id"], claims)
        types = [(e["claim"], e["type"]) for e in got["events"]]
        self.assertIn((a["id"], "claim.released"), types)
        self.assertIn((b["id"], "claim.waiting"), types)  # behind other's, which is not shown
        one, at, seen = None, 0, []
        while True:
            one = self.srv.get("/v1/events?run=%s&limit=1&since=%d" % (q(run), at)).json
            if not one["events"]:
                break
            seen += one["events"]
            at = one["next"]
        self.assertEqual(seen, got["events"])
        self.assertError(self.srv.get("/v1/events?run=%s&wait=1s" % q(run)), 400, "bad_request")
        self.assertError(self.srv.get("/v1/events?run=%s&claim=%s" % (q(run), a["id"])), 400,
                         "bad_request")
        self.assertError(self.srv.get("/v1/events?run="), 400, "bad_request")
        self.srv.release(b["id"])
        self.srv.release(other["id"])

    def test_release_a_run(self):
        """DELETE /v1/claims?holder_prefix=RUN/ ends a run's live claims in one
        call: held ones released, pending ones withdrawn (first, so none is
        granted on the way out), one event each; others left alone."""
        run = self.name("run")
        m, s = self.name("m"), self.name("s")
        self.srv.sem_put(s, 1)
        held = self.srv.claim(run + "/build", [("m", m)])
        waiting = self.srv.claim(run + "/test", [("m", m)])  # behind build
        sem = self.srv.claim(run + "/lint", [("s", s)])
        outsider = self.srv.claim(run + "x/build", [("s", s)])  # waits behind lint
        since = self.srv.events(0, limit=1)["next"]
        since = self.srv.get("/v1/events?since=%d&limit=10000" % since).json["next"]
        r = self.srv.delete("/v1/claims?holder_prefix=" + q(run + "/"))
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json, {"released": 2, "withdrawn": 1, "canceled": 0, "skipped": 0})
        states = {c["id"]: self.srv.claim_get(c["id"])["state"]
                  for c in (held, waiting, sem, outsider)}
        self.assertEqual(states, {held["id"]: "released", waiting["id"]: "withdrawn",
                                  sem["id"]: "released", outsider["id"]: "held"})
        events = self.srv.get("/v1/events?since=%d" % since).json["events"]
        ended = sorted((e["claim"], e["type"]) for e in events
                       if e["claim"] in (held["id"], waiting["id"], sem["id"]))
        self.assertEqual(ended, sorted([(held["id"], "claim.released"),
                                        (waiting["id"], "claim.withdrawn"),
                                        (sem["id"], "claim.released")]))
        # Nothing left of the run: all zero, not an error.
        again = self.srv.delete("/v1/claims?holder_prefix=" + q(run + "/"))
        self.assertEqual(again.json, {"released": 0, "withdrawn": 0, "canceled": 0, "skipped": 0})
        for bad in ("", "?holder_prefix=", "?holder_prefix=" + "x" * 254, "?holder=x",
                    "?holder_prefix=a&holder_prefix=b"):
            self.assertError(self.srv.delete("/v1/claims" + bad), 400, "bad_request")
        self.srv.release(outsider["id"])

    def test_claims_of_a_run(self):
        """run=RUN lists the claims of holder RUN and of holders RUN/...
        (the RUN/STEP convention), not those of RUN2/... nor RUNX."""
        run = self.name("run")
        m = self.name("m")
        mine = [self.srv.claim(h, [("m", m)]) for h in (run, run + "/build", run + "/test/unit")]
        others = [self.srv.claim(h, [("m", m)]) for h in (run + "x", run + "2/build", "x/" + run)]

        def ids(query):
            r = self.srv.get("/v1/claims?" + query)
            self.assertEqual(r.status, 200, r)
            return sorted(x["id"] for x in r.json["claims"])

        self.assertEqual(ids("run=" + q(run)), sorted(c["id"] for c in mine))
        self.assertEqual(ids("run=%s&state=pending" % q(run)),
                         sorted(c["id"] for c in mine[1:]))
        self.assertEqual(ids("run=%s/test&lock=mtx/%s" % (q(run), q(m))), [mine[2]["id"]])
        paged, after = [], None
        while True:
            body = self.srv.get("/v1/claims?run=%s&limit=1%s" % (
                q(run), "&after=" + q(after) if after else "")).json
            paged += [x["id"] for x in body["claims"]]
            after = body.get("next")
            if not after:
                break
        self.assertEqual(paged, [c["id"] for c in mine])
        self.assertError(self.srv.get("/v1/claims?run="), 400, "bad_request")
        self.assertError(self.srv.get("/v1/claims?run=" + "r" * 254), 400, "bad_request")
        for c in reversed(mine + others):
            self.srv.release(c["id"])

    def test_get_wait_seen_differs(self):
        """seen that differs from the state answers at once; a bad wait or
        seen is 400."""
        m = self.name("m")
        a = self.srv.claim("a", [("m", m)])
        t0 = time.monotonic()
        self.assertEqual(self.srv.claim_get(a["id"], "?wait=20s&seen=pending")["state"], "held")
        self.assertLess(time.monotonic() - t0, 1.0)
        self.assertError(self.srv.get("/v1/claims/%s?wait=abc" % a["id"]), 400, "bad_request")
        self.assertError(self.srv.get("/v1/claims/%s?wait=1s&seen=nope" % a["id"]), 400,
                         "bad_request")
        self.srv.release(a["id"])

    def test_get_wait_sees_end(self):
        """A wait on a held claim answers when another request releases it."""
        m = self.name("m")
        a = self.srv.claim("a", [("m", m)])
        conn, resp = self.srv.start_request("GET", "/v1/claims/%s?wait=20s" % a["id"])
        try:
            self.srv.release(a["id"])
            t0 = time.monotonic()
            got = json.loads(resp.read())
        finally:
            conn.close()
        self.assertEqual(got["state"], "released")
        self.assertLess(time.monotonic() - t0, 1.0)

    def test_post_wait(self):
        """POST ?wait holds the answer until the claim is held (201, Location
        sent with the headers) or the wait runs out (201 pending)."""
        m = self.name("m")
        a = self.srv.claim("a", [("m", m)])
        t0 = time.monotonic()
        p = self.srv.claim("p", [("m", m)], wait="400ms")
        self.assertEqual(p["state"], "pending")
        self.assertGreaterEqual(time.monotonic() - t0, 0.35)
        self.srv.release(p["id"])
        conn, resp = self.srv.start_request("POST", "/v1/claims", body={
            "holder": "b", "locks": [{"mutex": m}], "wait": "20s"})
        try:
            self.assertEqual(resp.status, 201)
            loc = resp.getheader("Location")
            self.assertTrue(loc.startswith("/v1/claims/"))
            self.assertEqual(self.srv.get(loc).json["state"], "pending")
            self.srv.release(a["id"])
            t0 = time.monotonic()
            got = json.loads(resp.read())
        finally:
            conn.close()
        self.assertLess(time.monotonic() - t0, 1.0)
        self.assertEqual(got["state"], "held")
        self.assertEqual("/v1/claims/" + got["id"], loc)
        self.assertEqual(got["locks"][0]["token"], a["locks"][0]["token"] + 1)
        self.srv.release(got["id"])


# ---------------------------------------------------------------------------
class TestWhyListsQueue(ApiCase):
    """GET /v1/claims/{id}/why, GET /v1/claims filters, GET /v1/queue."""

    def test_why_rules(self):
        """at_limit, behind and other_lock with used, limit, position and the
        claims ahead; a held claim has no reasons."""
        s, m = self.name("s"), self.name("m")
        self.srv.sem_put(s, 3)
        x = self.srv.claim("x", [("m", m)])
        h = self.srv.claim("h", [("s", s, 1)])
        w1 = self.srv.claim("w1", [("s", s, 2), ("m", m)])
        w2 = self.srv.claim("w2", [("s", s, 1)])
        w3 = self.srv.claim("w3", [("s", s, 3)])
        for w in (w1, w2, w3):
            self.assertEqual(w["state"], "pending")

        def why(c):
            r = self.srv.get("/v1/claims/%s/why" % c["id"])
            self.assertEqual(r.status, 200, r)
            self.assertEqual(r.json["state"], "pending")
            return {e["lock"]: e for e in r.json["reasons"]}

        y1 = why(w1)
        self.assertEqual(list(y1), ["sem/" + s, "mtx/" + m])
        self.assertEqual((y1["sem/" + s]["rule"], y1["sem/" + s]["position"],
                          y1["sem/" + s]["ahead"]), ("other_lock", 1, []))
        self.assertEqual((y1["mtx/" + m]["rule"], y1["mtx/" + m]["used"],
                          y1["mtx/" + m]["limit"], y1["mtx/" + m]["position"]),
                         ("at_limit", 1, 1, 1))
        y2 = why(w2)["sem/" + s]
        self.assertEqual((y2["rule"], y2["used"], y2["limit"], y2["position"], y2["ahead"]),
                         ("behind", 1, 3, 2, [w1["id"]]))
        self.assertTrue(y2["message"])
        y3 = why(w3)["sem/" + s]
        self.assertEqual((y3["rule"], y3["position"], y3["ahead"]),
                         ("at_limit", 3, [w1["id"], w2["id"]]))
        self.assertIn("at_limit", self.srv.claim_get(w3["id"])["reason"])
        hy = self.srv.get("/v1/claims/%s/why" % h["id"]).json
        self.assertEqual((hy["state"], hy["reasons"]), ("held", []))
        for c in (w3, w2, w1, h, x):
            self.srv.release(c["id"])

    def test_claims_filters(self):
        """GET /v1/claims filters by state, holder and lock; bad filters 400."""
        m = self.name("m")
        h1, h2 = self.name("h1"), self.name("h2")
        a = self.srv.claim(h1, [("m", m)])
        b = self.srv.claim(h2, [("m", m)])
        c = self.srv.claim(h1, [("m", self.name("other"))])

        def ids(query):
            r = self.srv.get("/v1/claims?" + query)
            self.assertEqual(r.status, 200, r)
            return sorted(x["id"] for x in r.json["claims"])

        self.assertEqual(ids("holder=" + q(h1)), sorted([a["id"], c["id"]]))
        self.assertEqual(ids("holder=%s&state=pending" % q(h2)), [b["id"]])
        self.assertEqual(ids("holder=%s&state=pending" % q(h1)), [])
        self.assertEqual(ids("lock=mtx/" + q(m)), sorted([a["id"], b["id"]]))
        self.assertEqual(ids("lock=mtx/%s&state=held" % q(m)), [a["id"]])
        self.assertEqual(ids("lock=mtx/%s&holder=%s" % (q(m), q(h2))), [b["id"]])
        self.assertEqual(ids("lock=mtx/" + q(self.name("unused"))), [])
        self.srv.release(c["id"])
        self.assertEqual(ids("holder=%s&state=released" % q(h1)), [c["id"]])
        pend = [x["id"] for x in self.srv.get("/v1/claims?state=pending").json["claims"]]
        self.assertIn(b["id"], pend)
        self.assertNotIn(a["id"], pend)
        self.assertError(self.srv.get("/v1/claims?state=nope"), 400, "bad_request")
        self.assertError(self.srv.get("/v1/claims?lock=" + q(m)), 400, "bad_request")
        self.assertError(self.srv.get("/v1/claims?lock=mtx/a//b"), 400, "bad_request")
        self.srv.release(b["id"])
        self.srv.release(a["id"])

    def test_queue_order(self):
        """/v1/queue: priority descending, then created, then arrival; each
        entry the claim plus position, rule and reason; ?lock= narrows to one
        lock's queue with that queue's positions."""
        m, m2 = self.name("m"), self.name("m2")
        hold = self.srv.claim("hold", [("m", m)])
        pa = self.srv.claim("pa", [("m", m)], created="2099-01-01T00:00:02.000Z")
        pb = self.srv.claim("pb", [("m", m)], created="2099-01-01T00:00:03.000Z", priority=5)
        pc = self.srv.claim("pc", [("m", m)], created="2099-01-01T00:00:01.000Z")
        pd = self.srv.claim("pd", [("m", m)], created="2099-01-01T00:00:01.000Z")
        hold2 = self.srv.claim("hold2", [("m", m2)])
        other = self.srv.claim("px", [("m", m2)], created="2099-01-01T00:00:01.500Z")
        want = [pb["id"], pc["id"], pd["id"], other["id"], pa["id"]]
        r = self.srv.get("/v1/queue")
        self.assertEqual(r.status, 200, r)
        full = r.json["queue"]
        positions = [e["position"] for e in full]
        self.assertEqual(positions, list(range(1, len(full) + 1)))
        mine = [e for e in full if e["id"] in want]
        self.assertEqual([e["id"] for e in mine], want)
        for e in mine:
            self.assertEqual(e["state"], "pending")
            self.assertEqual(e["rule"], "at_limit")
            self.assertIn("at_limit", e["reason"])
            self.assertClaimShape(e)
        r = self.srv.get("/v1/queue?lock=mtx/" + q(m))
        self.assertEqual(r.status, 200, r)
        self.assertEqual([(e["id"], e["position"]) for e in r.json["queue"]],
                         [(pb["id"], 1), (pc["id"], 2), (pd["id"], 3), (pa["id"], 4)])
        lm = self.srv.get("/v1/mutexes/" + m).json
        self.assertEqual([p["claim"] for p in lm["pending"]],
                         [pb["id"], pc["id"], pd["id"], pa["id"]])
        self.assertEqual(self.srv.get("/v1/queue?lock=mtx/" + q(self.name("idle"))).json,
                         {"queue": []})
        self.assertError(self.srv.get("/v1/queue?lock=" + q(m)), 400, "bad_request")
        self.assertError(self.srv.get("/v1/queue?lock=mtx/a//b"), 400, "bad_request")
        for c in (pa, pb, pc, pd, other, hold, hold2):
            self.srv.release(c["id"])


# ---------------------------------------------------------------------------
class TestEvents(ApiCase):
    """GET /v1/events (pages, filters, long poll) and /v1/events/stream."""

    def test_pages(self):
        """since, limit, claim and next: next is the last seq examined (since
        when none); seq grows by one; events have every field."""
        m = self.name("m")
        s0 = self.last_seq()
        a = self.srv.claim("a", [("m", m)])
        b = self.srv.claim("b", [("m", m)])
        self.srv.release(a["id"])
        page = self.srv.events(s0)
        evs = page["events"]
        self.assertEqual([(e["type"], e["claim"]) for e in evs], [
            ("claim.queued", a["id"]), ("claim.acquired", a["id"]),
            ("claim.queued", b["id"]), ("claim.waiting", b["id"]),
            ("claim.released", a["id"]), ("claim.acquired", b["id"])])
        self.assertEqual([e["seq"] for e in evs], list(range(s0 + 1, s0 + 7)))
        self.assertEqual(page["next"], s0 + 6)
        for e in evs:
            self.assertEqual(set(e), {"seq", "time", "type", "claim", "holder", "locks",
                                      "reason", "actor"})
            self.assertEqual(e["actor"], "anonymous" if e["type"] != "claim.acquired" or
                             e["claim"] == a["id"] else "sluice")
            self.assertRegex(e["time"], RFC3339_MS)
            self.assertEqual(e["locks"], ["mtx/" + m])
        self.assertEqual(evs[0]["holder"], "a")
        p1 = self.srv.events(s0, limit=2)
        self.assertEqual(([e["seq"] for e in p1["events"]], p1["next"]),
                         ([s0 + 1, s0 + 2], s0 + 2))
        p2 = self.srv.events(p1["next"], limit=2)
        self.assertEqual([e["seq"] for e in p2["events"]], [s0 + 3, s0 + 4])
        end = self.srv.events(s0 + 6)
        self.assertEqual(end, {"events": [], "next": s0 + 6})
        pb = self.srv.events(s0, claim=b["id"])
        self.assertEqual([e["type"] for e in pb["events"]],
                         ["claim.queued", "claim.waiting", "claim.acquired"])
        self.assertGreaterEqual(pb["next"], pb["events"][-1]["seq"])
        self.assertEqual(self.srv.events(pb["next"], claim=b["id"])["events"], [])
        self.assertEqual(len(self.srv.events(0, limit=0)["events"]),
                         min(1000, len(self.srv.all_events(0))))
        self.assertError(self.srv.get("/v1/events?limit=10001"), 400, "bad_request")
        self.assertError(self.srv.get("/v1/events?since=abc"), 400, "bad_request")
        self.assertError(self.srv.get("/v1/events?since=-1"), 400, "bad_request")
        self.assertError(self.srv.get("/v1/events?wait=forever"), 400, "bad_request")
        self.srv.release(b["id"])

    def test_semaphore_events(self):
        """Configuration changes are events too."""
        s = self.name("s")
        s0 = self.last_seq()
        self.srv.sem_put(s, 2)
        self.srv.delete("/v1/semaphores/" + s)
        types = [e["type"] for e in self.srv.events(s0)["events"]]
        self.assertEqual(types, ["semaphore.updated", "semaphore.deleted"])

    def test_wait_wakes_on_new_event(self):
        """An empty page held by wait answers within 1 s of a new event."""
        s0 = self.last_seq()
        conn, resp = self.srv.start_request("GET", "/v1/events?since=%d&wait=20s" % s0)
        try:
            self.assertEqual(resp.status, 200)
            c = self.srv.claim("a", [("m", self.name("m"))])
            t0 = time.monotonic()
            page = json.loads(resp.read())
        finally:
            conn.close()
        self.assertLess(time.monotonic() - t0, 1.0)
        self.assertEqual(page["events"][0]["seq"], s0 + 1)
        self.assertEqual((page["events"][0]["type"], page["events"][0]["claim"]),
                         ("claim.queued", c["id"]))
        self.srv.release(c["id"])

    def test_wait_claim_filter(self):
        """A wait with claim= ignores other claims' events and wakes on its
        claim's."""
        m = self.name("m")
        a = self.srv.claim("a", [("m", m)])
        b = self.srv.claim("b", [("m", m)])
        s0 = self.last_seq()
        conn, resp = self.srv.start_request(
            "GET", "/v1/events?since=%d&wait=20s&claim=%s" % (s0, b["id"]))
        try:
            self.srv.claim("c", [("m", self.name("other"))])
            self.srv.release(a["id"])  # b acquires
            page = json.loads(resp.read())
        finally:
            conn.close()
        self.assertEqual([(e["type"], e["claim"]) for e in page["events"]],
                         [("claim.acquired", b["id"])])
        self.srv.release(b["id"])

    def test_wait_runs_out(self):
        """Without events, wait answers an empty page after about the wait."""
        s0 = self.last_seq()
        t0 = time.monotonic()
        page = self.srv.events(s0, wait="500ms")
        dt = time.monotonic() - t0
        self.assertEqual(page, {"events": [], "next": s0})
        self.assertGreaterEqual(dt, 0.45)
        self.assertLess(dt, 3.0)

    def read_sse(self, resp, n):
        """Reads n events from a text/event-stream response: (id, data)."""
        out = []
        ident, data = None, None
        while len(out) < n:
            line = resp.readline()
            self.assertTrue(line, "the stream ended early")
            line = line.decode("utf-8").rstrip("\n")
            if line.startswith(":"):
                continue  # a comment (keep-alive)
            if line == "":
                if ident is not None:
                    out.append((ident, data))
                ident, data = None, None
            elif line.startswith("id: "):
                ident = int(line[4:])
            elif line.startswith("data: "):
                data = json.loads(line[6:])
            else:
                self.fail("unexpected line in the stream: %r" % line)
        return out

    def test_stream(self):
        """The stream catches up from since (id: is seq, data: the event's
        JSON), then sends live events as they happen; Last-Event-ID resumes."""
        m = self.name("m")
        a = self.srv.claim("a", [("m", m)])
        s1 = self.last_seq()
        logged = self.srv.all_events(s1 - 2)
        conn, resp = self.srv.start_request("GET", "/v1/events/stream?since=%d" % (s1 - 2))
        try:
            self.assertEqual(resp.status, 200)
            self.assertTrue(resp.getheader("Content-Type").startswith("text/event-stream"))
            got = self.read_sse(resp, 2)
            self.assertEqual([i for i, _ in got], [s1 - 1, s1])
            self.assertEqual([d for _, d in got], logged)
            b = self.srv.claim("b", [("m", m)])
            live = self.read_sse(resp, 2)
            self.assertEqual([i for i, _ in live], [s1 + 1, s1 + 2])
            self.assertEqual([(d["type"], d["claim"], d["seq"]) for _, d in live],
                             [("claim.queued", b["id"], s1 + 1),
                              ("claim.waiting", b["id"], s1 + 2)])
        finally:
            conn.close()
        conn, resp = self.srv.start_request("GET", "/v1/events/stream?since=0",
                                            headers={"Last-Event-ID": str(s1)})
        try:
            got = self.read_sse(resp, 2)
            self.assertEqual([i for i, _ in got], [s1 + 1, s1 + 2])
        finally:
            conn.close()
        self.assertError(self.srv.post("/v1/events/stream"), 405)
        self.srv.release(b["id"])
        self.srv.release(a["id"])

    def test_stream_from_zero_catches_up_in_pages(self):
        """A stream from 0 delivers the whole log in order with no gaps, past
        one page (500 events) of catch-up."""
        m = self.name("m")
        while self.last_seq() < 1100:
            cs = [self.srv.claim("bulk", [("m", "%s/%d" % (m, i))]) for i in range(60)]
            for c in cs:
                self.srv.release(c["id"])
        last = self.last_seq()
        conn, resp = self.srv.start_request("GET", "/v1/events/stream")
        try:
            got = self.read_sse(resp, last)
        finally:
            conn.close()
        self.assertEqual([i for i, _ in got], list(range(1, last + 1)))
        self.assertEqual([d["seq"] for _, d in got], list(range(1, last + 1)))


# ---------------------------------------------------------------------------
class TestOps(ApiCase):
    """/healthz, /metrics, unknown paths and methods."""

    def test_healthz(self):
        r = self.srv.get("/healthz")
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json["status"], "ok")
        self.assertTrue(r.headers["content-type"].startswith("application/json"))
        # The store as configured, but never its password (/healthz needs no token).
        shown = self.srv.store_url
        if self.srv.store_kind == "postgres":
            from pg_fixture import PASSWORD
            self.assertIn(PASSWORD, self.srv.store_url)
            shown = self.srv.store_url.replace(":" + PASSWORD, "")
            self.assertNotIn(PASSWORD, self.srv.stderr())
        self.assertEqual(r.json["store"], shown)

    def test_metrics(self):
        """Prometheus text: per-lock limit/used/holders/pending, claims by
        outcome, wait histogram, HTTP requests by route and status, commit
        latency; every sample line parses."""
        m, s = self.name("x"), self.name("s")
        self.srv.sem_put(s, 3)
        a = self.srv.claim("a", [("m", m), ("s", s, 2)])
        b = self.srv.claim("b", [("m", m)])
        self.srv.get("/v1/claims/NoSuchClaim")
        r = self.srv.get("/metrics")
        self.assertEqual(r.status, 200, r)
        self.assertTrue(r.headers["content-type"].startswith("text/plain"), r.headers)
        text = r.body.decode("utf-8")
        for line in ('sluice_lock_used{lock="mtx/%s"} 1' % m,
                     'sluice_lock_limit{lock="mtx/%s"} 1' % m,
                     'sluice_lock_holders{lock="mtx/%s"} 1' % m,
                     'sluice_lock_pending{lock="mtx/%s"} 1' % m,
                     'sluice_lock_used{lock="sem/%s"} 2' % s,
                     'sluice_lock_limit{lock="sem/%s"} 3' % s,
                     "# TYPE sluice_http_requests_total counter"):
            self.assertIn(line + "\n", text)
        self.assertRegex(text, r'sluice_http_requests_total\{route="/v1/claims",method="POST",'
                               r'status="201"\} [1-9]\d*\n')
        self.assertRegex(text, r'sluice_http_requests_total\{route="/v1/claims/\{id\}",'
                               r'method="GET",status="404"\} [1-9]\d*\n')
        self.assertRegex(text, r"\nsluice_store_log_unapplied \d+\n")
        for name in ("sluice_claim_wait_seconds_bucket", "sluice_store_commit_seconds_count",
                     "sluice_claims_ended_total"):
            self.assertIn(name, text)
        sample = re.compile(r'^[a-zA-Z_:][a-zA-Z0-9_:]*(\{[a-z_]+="[^"]*"(,[a-z_]+="[^"]*")*\})?'
                            r' [-+0-9.eE]+(Inf)?$')
        for line in text.splitlines():
            if line.startswith("#"):
                self.assertRegex(line, r"^# (HELP|TYPE) ")
            else:
                self.assertRegex(line, sample)
        self.srv.release(b["id"])
        self.srv.release(a["id"])

    def test_unknown_paths_404(self):
        for path in ("/v1/nothing", "/nothing", "/v1", "/v1/claims/abc/explode",
                     "/v1/events/other", "/v1/queue/x", "/v2/claims"):
            self.assertError(self.srv.get(path), 404, "not_found")

    def test_wrong_methods_405(self):
        """A known path with a method it does not take: 405 with Allow."""
        c = self.srv.claim("a", [("m", self.name("m"))])
        cases = [("POST", "/v1/semaphores", "GET, HEAD"), ("DELETE", "/v1/semaphores", "GET, HEAD"),
                 ("PUT", "/v1/mutexes/x", "GET, HEAD"), ("POST", "/v1/mutexes", "GET, HEAD"),
                 ("PUT", "/v1/claims", "GET, HEAD, POST, DELETE"),
                 ("POST", "/v1/queue", "GET, HEAD, DELETE"), ("POST", "/v1/events", "GET, HEAD"),
                 ("PUT", "/v1/claims/" + c["id"], "GET, HEAD, DELETE"),
                 ("GET", "/v1/claims/%s/renew" % c["id"], "POST"),
                 ("POST", "/v1/claims/%s/why" % c["id"], "GET, HEAD"),
                 ("POST", "/v1/history", "GET, HEAD"),
                 ("POST", "/v1/semaphores/x", "GET, HEAD, PUT, DELETE")]
        for method, path, allow in cases:
            r = self.srv.request(method, path, raw=b"{}")
            self.assertError(r, 405)
            self.assertEqual(r.headers.get("allow"), allow, (method, path))
        self.assertEqual(self.srv.claim_get(c["id"])["state"], "held")
        self.srv.release(c["id"])

    def test_patch_options_405(self):
        """PATCH and OPTIONS reach the routes and get a JSON 405 with Allow,
        like any other method a path does not take (docs/api.md: errors are JSON)."""
        for method in ("PATCH", "OPTIONS"):
            for path, allow in (("/v1/claims", "GET, HEAD, POST, DELETE"), ("/v1/semaphores/x",
                                                                    "GET, HEAD, PUT, DELETE"),
                                ("/healthz", "GET, HEAD"), ("/metrics", "GET, HEAD")):
                r = self.srv.request(method, path, raw=b"{}")
                self.assertError(r, 405, "method_not_allowed")
                self.assertEqual(r.headers.get("allow"), allow, (method, path))
        self.assertError(self.srv.post("/healthz"), 405)
        self.assertStillServing()

    def test_head_everywhere_get_is(self):
        """HEAD on every route that takes GET: GET's status and headers
        (Content-Length included), no body; the event stream's headers end
        at once rather than keeping a stream open."""
        c = self.srv.claim("h", [("m", self.name("m"))])
        self.srv.sem_put(self.name("s"), 2)
        for path in ("/v1/semaphores", "/v1/semaphores/" + q(self.name("s")), "/v1/mutexes",
                     "/v1/mutexes/" + q(self.name("m")), "/v1/claims", "/v1/claims/" + c["id"],
                     "/v1/claims/%s/why" % c["id"], "/v1/queue", "/v1/events?since=0",
                     "/v1/status", "/v1/history?lock=mtx/" + q(self.name("m")), "/healthz",
                     "/metrics", "/v1/claims/nope"):
            got = self.srv.get(path)
            head = self.srv.request("HEAD", path)
            self.assertEqual(head.status, got.status, path)
            self.assertEqual(head.body, b"", path)
            self.assertEqual(head.headers.get("content-type"), got.headers.get("content-type"),
                             path)
            if path != "/metrics" and "content-length" in got.headers:  # (it counts itself)
                self.assertEqual(head.headers.get("content-length"),
                                 got.headers["content-length"], path)
        stream = self.srv.request("HEAD", "/v1/events/stream")
        self.assertEqual((stream.status, stream.body), (200, b""))
        self.assertEqual(stream.headers.get("content-type"), "text/event-stream")
        self.srv.release(c["id"])

    def test_unknown_method(self):
        """A method HTTP/1.1 servers need not know gets an error status (libevent
        answers 501) and the server keeps serving."""
        for method in ("TRACE", "BREW"):
            r = self.srv.request(method, "/v1/claims", raw=b"{}")
            self.assertIn(r.status, (400, 405, 501), (method, r))
        self.assertStillServing()


# ---------------------------------------------------------------------------
class TestAuth(ApiCase):
    """Bearer tokens: admin, prefix-limited, none."""

    CONFIG = """
tokens:
  - name: admin
    token: "adm-secret-0123456789"
    admin: true
  - name: team-a
    token: "a-secret-0123456789"
    prefixes: ["team-a/"]
"""
    TOKEN = "adm-secret-0123456789"

    def test_missing_or_wrong_token_401(self):
        for path in ("/v1/claims", "/v1/semaphores", "/v1/mutexes/x", "/v1/queue", "/v1/events",
                     "/metrics"):
            r = self.srv.get(path, token="")
            self.assertError(r, 401, "unauthorized")
            self.assertIn("Bearer", r.headers.get("www-authenticate", ""))
            self.assertError(self.srv.get(path, token="nope"), 401, "unauthorized")
            self.assertError(self.srv.get(path, token="adm-secret-012345678"), 401, "unauthorized")
            self.assertError(self.srv.get(path, token="adm-secret-0123456789X"), 401,
                             "unauthorized")
            self.assertError(self.srv.get(path, token="",
                                          headers={"Authorization": "Basic adm-secret-0123456789"}),
                             401, "unauthorized")
        r = self.srv.post("/v1/claims", {"holder": "x", "locks": [{"mutex": "team-a/m"}]},
                          token="")
        self.assertError(r, 401, "unauthorized")
        self.assertEqual(self.srv.get("/v1/claims?holder=x").json["claims"], [])

    def test_healthz_needs_none(self):
        r = self.srv.get("/healthz", token="")
        self.assertEqual(r.status, 200, r)
        self.assertEqual(set(r.json), {"status", "role"})  # F14: the details need a token
        self.assertEqual(self.srv.get("/healthz", token="wrong").status, 200)

    def test_limited_token(self):
        """A limited token claims, reads and configures under its prefixes
        only (403 elsewhere); an admin token does everything."""
        A = "a-secret-0123456789"
        inside = self.srv.post("/v1/claims", {"holder": "team-a/ta", "locks": [
            {"mutex": "team-a/deploy"}]}, token=A)
        self.assertEqual((inside.status, inside.json["state"]), (201, "held"))
        cid = inside.json["id"]
        self.assertEqual(self.srv.get("/v1/claims/" + cid, token=A).status, 200)
        self.assertEqual(self.srv.get("/v1/mutexes/team-a/deploy", token=A).status, 200)
        self.assertEqual(self.srv.put("/v1/semaphores/team-a/db", {"limit": 2}, token=A).status,
                         200)
        self.assertError(self.srv.post("/v1/claims", {"holder": "team-a/ta", "locks": [
            {"mutex": "team-b/deploy"}]}, token=A), 403, "forbidden")
        self.assertError(self.srv.post("/v1/claims", {"holder": "team-a/ta", "locks": [
            {"mutex": "team-a/x"}, {"mutex": "team-ab/x"}]}, token=A), 403, "forbidden")
        self.assertError(self.srv.post("/v1/claims", {"holder": "team-a/ta", "group": "team-b/g"},
                                       token=A), 403, "forbidden")
        self.assertError(self.srv.put("/v1/semaphores/team-b/db", {"limit": 2}, token=A), 403,
                         "forbidden")
        self.assertError(self.srv.put("/v1/semaphores/team-ab", {"limit": 2}, token=A), 403,
                         "forbidden")
        self.assertError(self.srv.get("/v1/mutexes/team-b/deploy", token=A), 403, "forbidden")
        self.assertError(self.srv.delete("/v1/semaphores/team-b/db", token=A), 403, "forbidden")
        self.assertEqual(self.srv.get("/v1/semaphores/team-b/db").status, 404)
        # Someone else's claim is out of reach; listings show only what it may see.
        other = self.srv.claim("tb", [("m", "team-b/deploy")])
        for method, path in (("GET", "/v1/claims/" + other["id"]),
                             ("DELETE", "/v1/claims/" + other["id"]),
                             ("POST", "/v1/claims/%s/renew" % other["id"]),
                             ("GET", "/v1/claims/%s/why" % other["id"])):
            # 404, as for an id that does not exist (F8).
            self.assertError(self.srv.request(method, path, token=A), 404, "not_found")
        self.assertEqual(self.srv.claim_get(other["id"])["state"], "held")
        listed = [c["id"] for c in self.srv.get("/v1/claims", token=A).json["claims"]]
        self.assertIn(cid, listed)
        self.assertNotIn(other["id"], listed)
        self.assertEqual(self.srv.get("/v1/mutexes", token=A).json["mutexes"][0]["name"],
                         "team-a/deploy")
        self.assertEqual(len(self.srv.get("/v1/mutexes", token=A).json["mutexes"]), 1)
        # The event log: team-a's own events only (test_auth_matrix has the rest).
        shown = {e["claim"] for e in self.srv.get("/v1/events", token=A).json["events"]}
        self.assertIn(cid, shown)
        self.assertNotIn(other["id"], shown)
        self.assertEqual(self.srv.delete("/v1/claims/" + cid, token=A).json["state"], "released")
        self.srv.release(other["id"])


# ---------------------------------------------------------------------------
class TestDefaultTimeout(ApiCase):
    """The configuration's default_timeout bounds the pending time of claims
    that set no timeout; a claim's own timeout (0 included) wins."""

    CONFIG = """
default_timeout: 300ms
"""

    def test_default_timeout_applies_when_none_is_given(self):
        m = self.name("m")
        holder = self.srv.claim("h", [("m", m)])
        dflt = self.srv.claim("d", [("m", m)])
        own = self.srv.claim("o", [("m", m)], timeout="0")
        self.assertEqual(dflt["timeout"], "300ms")
        self.assertEqual(own["timeout"], "0")
        got = self.srv.claim_get(dflt["id"], "?wait=10s&seen=pending")
        self.assertEqual(got["state"], "timed_out")
        self.assertEqual(self.srv.claim_get(own["id"])["state"], "pending")
        self.srv.release(holder["id"])
        self.assertEqual(self.srv.claim_get(own["id"], "?wait=10s&seen=pending")["state"], "held")
        self.srv.release(own["id"])


class TestLeases(ApiCase):
    """Leases end to end: expiry frees the slots; waits and renewals are signs
    of life."""

    def test_lease_expires_and_next_is_granted(self):
        """A claim with lease 300ms that nobody renews ends expired and the
        next waiter is granted."""
        m = self.name("m")
        a = self.srv.claim("a", [("m", m)], lease="300ms")
        b = self.srv.claim("b", [("m", m)])
        self.assertEqual(a["state"], "held")
        t0 = time.monotonic()
        got = self.srv.claim_get(b["id"], "?wait=10s&seen=pending")
        self.assertEqual(got["state"], "held")
        self.assertLess(time.monotonic() - t0, 5.0)
        ga = self.srv.claim_get(a["id"])
        self.assertEqual(ga["state"], "expired")
        self.assertEqual(got["locks"][0]["token"], a["locks"][0]["token"] + 1)
        types = [e["type"] for e in self.srv.events(0, claim=a["id"])["events"]]
        self.assertEqual(types, ["claim.queued", "claim.acquired", "claim.expired"])
        self.srv.release(b["id"])

    def test_watching_keeps_alive(self):
        """A GET ?wait on the claim is a sign of life: 1 s waits on a claim of
        lease 500ms answer held; the lease then counts from the wait's end."""
        m = self.name("m")
        a = self.srv.claim("a", [("m", m)], lease="500ms")
        got = self.srv.claim_get(a["id"], "?wait=1s")
        self.assertEqual(got["state"], "held")
        got = self.srv.claim_get(a["id"], "?wait=800ms&seen=pending")  # answers at once
        self.assertEqual(got["state"], "held")
        got = self.srv.claim_get(a["id"], "?wait=1s")
        self.assertEqual(got["state"], "held")
        # Nobody watches now: it expires.
        fx.wait_until(lambda: self.srv.claim_get(a["id"])["state"] == "expired", 5.0,
                      what="expiry after the last wait")

    def test_renew_keeps_alive(self):
        """Renewing every 100 ms keeps a 500ms lease alive well past it (the
        margin leaves room for a loaded machine); without renewals it expires."""
        m = self.name("m")
        a = self.srv.claim("a", [("m", m)], lease="500ms")
        t0 = time.monotonic()
        while time.monotonic() - t0 < 1.5:
            r = self.srv.post("/v1/claims/%s/renew" % a["id"])
            self.assertEqual((r.status, r.json["state"]), (200, "held"), r)
            time.sleep(0.1)  # the client's renewal cadence, not a wait for state
        r = self.srv.post("/v1/claims/%s/renew" % a["id"])
        self.assertEqual(r.status, 200, r)
        # Polled without wait: a waiting request would itself keep it alive.
        fx.wait_until(lambda: self.srv.claim_get(a["id"])["state"] == "expired", 5.0,
                      what="expiry once renewals stop")
        r = self.srv.post("/v1/claims/%s/renew" % a["id"])
        self.assertError(r, 409, "conflict")
        self.assertEqual(r.json["claim"]["state"], "expired")

    def test_semaphore_lease_and_timeout(self):
        """A claim with no lease gets its semaphore's; timeout ends a waiter
        timed_out."""
        s, m = self.name("s"), self.name("m")
        self.srv.sem_put(s, 1, lease="45s")
        a = self.srv.claim("a", [("s", s)])
        self.assertEqual(a["lease"], "45s")
        self.srv.release(a["id"])
        h = self.srv.claim("h", [("m", m)])
        w = self.srv.claim("w", [("m", m)], timeout="300ms")
        got = self.srv.claim_get(w["id"], "?wait=10s&seen=pending")
        self.assertEqual(got["state"], "timed_out")
        self.assertEqual(self.srv.claim_get(h["id"])["state"], "held")
        self.srv.release(h["id"])


# ---------------------------------------------------------------------------
class TestPages(ApiCase):
    """GET /v1/claims and /v1/queue a page at a time: limit, after, next
    (docs/api.md, Listings). Following next gives the whole listing once, in
    order, and resumes in the right place when the claim a page ended on
    has ended since."""

    def pages(self, path, limit):
        """Every entry, following next; and the number of pages."""
        out, after, n = [], None, 0
        key = "claims" if path.startswith("/v1/claims") else "queue"
        sep = "&" if "?" in path else "?"
        while True:
            url = path + sep + "limit=%d" % limit + ("&after=" + q(after) if after else "")
            body = self.srv.get(url).json
            self.assertLessEqual(len(body[key]), limit)
            out += body[key]
            n += 1
            after = body.get("next")
            if not after:
                return out, n
            self.assertIsInstance(after, str)

    def test_pages_cover_the_listing_once_in_order(self):
        m = self.name("m")
        made = [self.srv.claim("pg-%02d" % i, [("m", m)], priority=i % 3) for i in range(23)]
        whole = self.srv.get("/v1/queue").json["queue"]
        self.assertNotIn("next", self.srv.get("/v1/queue").json)
        got, n = self.pages("/v1/queue", 5)
        self.assertEqual(n, 5)
        self.assertEqual([c["id"] for c in got], [c["id"] for c in whole])
        self.assertEqual([c["position"] for c in got], list(range(1, len(whole) + 1)))
        claims, _ = self.pages("/v1/claims", 4)
        ids = [c["id"] for c in claims]
        self.assertEqual(len(ids), len(set(ids)))
        self.assertEqual([c["id"] for c in self.srv.get("/v1/claims").json["claims"]], ids)
        for cid in [c["id"] for c in made]:
            self.assertIn(cid, ids)
        lock, _ = self.pages("/v1/queue?lock=mtx/" + q(m), 6)
        self.assertEqual([c["id"] for c in lock],
                         [c["id"] for c in self.srv.get("/v1/queue?lock=mtx/" + q(m)).json["queue"]])
        of_lock, _ = self.pages("/v1/claims?lock=mtx/" + q(m), 7)
        self.assertEqual(len(of_lock), 23)
        for c in made:
            self.srv.release(c["id"])

    def test_resume_after_the_last_claim_ended(self):
        m = self.name("m")
        made = [self.srv.claim("rs-%02d" % i, [("m", m)]) for i in range(12)]
        first = self.srv.get("/v1/queue?limit=4").json
        last = first["queue"][-1]["id"]
        self.srv.release(last)  # withdrawn: it leaves the queue
        rest = self.srv.get("/v1/queue?limit=100&after=" + q(first["next"])).json["queue"]
        self.assertEqual([c["id"] for c in rest], [c["id"] for c in made[5:]])
        self.assertEqual(rest[0]["position"], 5)
        for c in made:
            self.srv.release(c["id"])

    def test_lock_lists_limited(self):
        """GET of one lock with limit=N: the first N holders and waiters, in
        the lock's order, with counts of all; limit=0 the counts alone."""
        sem = self.name("s")
        self.srv.sem_put(sem, 3)
        made = [self.srv.claim("ll-%02d" % i, [("s", sem)]) for i in range(9)]
        whole = self.srv.get("/v1/semaphores/" + q(sem)).json
        self.assertEqual((whole["holders_count"], whole["pending_count"]), (3, 6))
        self.assertEqual((len(whole["holders"]), len(whole["pending"])), (3, 6))
        for n in (0, 1, 2, 5):
            part = self.srv.get("/v1/semaphores/%s?limit=%d" % (q(sem), n)).json
            self.assertEqual((part["holders_count"], part["pending_count"]), (3, 6))
            self.assertEqual(part["holders"], whole["holders"][:n])
            self.assertEqual(part["pending"], whole["pending"][:n])
        m = self.name("m")
        self.srv.claim("ll-m", [("m", m)])
        one = self.srv.get("/v1/mutexes/%s?limit=1" % q(m)).json
        self.assertEqual((one["holders_count"], len(one["holders"])), (1, 1))
        for bad in ("limit=100001", "limit=x", "limt=1"):
            self.assertError(self.srv.get("/v1/semaphores/%s?%s" % (q(sem), bad)), 400,
                             "bad_request")
        self.assertError(self.srv.put("/v1/semaphores/%s?limit=1" % q(sem), {"limit": 3}), 400,
                         "bad_request")
        for c in made:
            self.srv.release(c["id"])

    def test_bad_page_arguments(self):
        for path in ("/v1/claims?limit=0", "/v1/queue?limit=10001", "/v1/claims?after=zz",
                     "/v1/queue?after=1.2", "/v1/claims?lock=mtx/x&after=12",
                     "/v1/queue?limit=-1"):
            self.assertError(self.srv.get(path), 400, "bad_request")


if __name__ == "__main__":
    fx.main()
