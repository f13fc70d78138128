"""test_openapi.py - docs/openapi.yaml, the machine-readable API.

The document itself: it parses, it is OpenAPI 3.1, every route docs/api.md
names is in it with the methods the server serves, every $ref resolves and
every schema is a valid Draft 2020-12 schema. The checker
(openapi_check.py): it refuses answers that drift from the document (a
missing field, a wrong type, an unknown path or status, another content
type). And against a real sluiced: a tour that reaches every operation of
the document at least once, each answer checked by the fixture's hook
(which every other server test has on too)."""
import json
import os
import re
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import openapi_check  # noqa: E402
import sluiced_fixture as fx  # noqa: E402
from sluiced_fixture import Sluiced, q  # noqa: E402

API_MD = os.path.join(HERE, "..", "..", "docs", "api.md")

# Every operation the server serves (src/server/routes*.c), as
# (method, template of the document).
OPERATIONS = {
    ("GET", "/v1/semaphores"),
    ("GET", "/v1/semaphores/{name}"), ("PUT", "/v1/semaphores/{name}"),
    ("DELETE", "/v1/semaphores/{name}"),
    ("GET", "/v1/mutexes"), ("GET", "/v1/mutexes/{name}"),
    ("GET", "/v1/history"),
    ("POST", "/v1/claims"), ("GET", "/v1/claims"), ("DELETE", "/v1/claims"),
    ("GET", "/v1/claims/{id}"), ("DELETE", "/v1/claims/{id}"),
    ("POST", "/v1/claims/{id}/renew"), ("GET", "/v1/claims/{id}/why"),
    ("POST", "/v1/claims/{id}/cancel"),
    ("GET", "/v1/queue"), ("DELETE", "/v1/queue"),
    ("GET", "/v1/events"), ("GET", "/v1/events/stream"),
    ("GET", "/v1/status"), ("GET", "/v1/whoami"), ("GET", "/healthz"), ("GET", "/metrics"),
    ("GET", "/"), ("GET", "/queue"), ("GET", "/claims/{id}"), ("GET", "/ui/{file}"),
    ("GET", "/claims"), ("GET", "/locks/{key}"), ("GET", "/runs/{run}"),
}

ERROR_CODES = {"bad_request", "unauthorized", "forbidden", "not_found", "conflict", "queue_full",
               "unknown_semaphore", "too_large", "method_not_allowed", "quota_exceeded",
               "unavailable", "audit_unavailable", "no_leader", "leader_changed", "leader_lost",
               "not_leader",
               "leader_unverified", "bad_gateway"}

CLAIM_ID = "AAAAAAAAaaaaaaaaaaaaaa"


def refs(node, where=""):
    """Every ($ref, where) in the document."""
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "$ref" and isinstance(v, str):
                yield v, where
            else:
                yield from refs(v, where + "/" + str(k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from refs(v, "%s/%d" % (where, i))


class TestDocument(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.doc = openapi_check.load()

    def test_is_openapi_3_1(self):
        self.assertTrue(str(self.doc["openapi"]).startswith("3.1."), self.doc["openapi"])
        for key in ("info", "paths", "components"):
            self.assertIn(key, self.doc)
        self.assertEqual(self.doc["components"]["securitySchemes"]["bearer"],
                         {**self.doc["components"]["securitySchemes"]["bearer"],
                          "type": "http", "scheme": "bearer"})

    def test_every_route_of_api_md_is_documented(self):
        with open(API_MD, encoding="utf-8") as f:
            text = f.read()
        named = set(re.findall(r"(/v1/[A-Za-z0-9/{}*_.-]*[A-Za-z0-9}*_]|/healthz|/metrics)",
                               text))
        self.assertIn("/v1/claims/{id}/cancel", named)
        for route in sorted(named):
            # Concrete values for the placeholders docs/api.md writes.
            path = re.sub(r"\{id\}", CLAIM_ID, route)
            path = re.sub(r"\{pattern\*\}", "team-*", path)
            path = path.replace("{name}", "a/b")
            template, _ = openapi_check.find_path(path)
            self.assertIsNotNone(template, "%s (docs/api.md) is not in docs/openapi.yaml"
                                 % route)

    def test_every_operation_is_documented(self):
        documented = set()
        for template, item in self.doc["paths"].items():
            for method in ("get", "put", "post", "delete", "patch", "head", "options"):
                if method in item:
                    documented.add((method.upper(), template))
        self.assertEqual(documented, OPERATIONS)

    def test_every_ref_resolves(self):
        n = 0
        for ref, where in refs(self.doc):
            self.assertTrue(ref.startswith("#/"), "%s: %s is not local" % (where, ref))
            try:
                openapi_check.pointer_get(self.doc, ref[1:])
            except (KeyError, IndexError, ValueError):
                self.fail("%s: $ref %s does not resolve" % (where, ref))
            n += 1
        self.assertGreater(n, 100)

    def test_schemas_are_valid_2020_12(self):
        import jsonschema
        for name, schema in self.doc["components"]["schemas"].items():
            with self.subTest(schema=name):
                jsonschema.Draft202012Validator.check_schema(schema)

    def test_error_codes(self):
        codes = self.doc["components"]["schemas"]["ErrorCode"]["enum"]
        self.assertEqual(set(codes), ERROR_CODES)

    def test_path_parameters_are_declared(self):
        for template, item in self.doc["paths"].items():
            names = set(re.findall(r"\{([^}]+)\}", template))
            declared = set()
            for p in item.get("parameters", []):
                _, p = openapi_check._deref(self.doc, p["$ref"][1:]) if "$ref" in p else (0, p)
                if p["in"] == "path":
                    declared.add(p["name"])
            self.assertEqual(names, declared, template)


def claim_body(**over):
    c = {"id": CLAIM_ID, "state": "held", "holder": "h",
         "locks": [{"kind": "mutex", "name": "m", "slots": 1, "token": 3, "position": None}],
         "priority": 0, "created": "2026-11-26T10:00:00.000Z", "rebalance_key": None,
         "tags": {}, "group": None, "lease": "0", "expires": None, "timeout": "0",
         "arrived": "2026-11-26T10:00:00.000Z", "granted": "2026-11-26T10:00:00.000Z",
         "ended": None, "reason": "held", "by": None, "actor": None}
    c.update(over)
    return json.dumps(c).encode()


JSON = {"content-type": "application/json"}


class TestChecker(unittest.TestCase):
    """The checker catches drift."""

    def ok(self, method, path, status, body, headers=JSON):
        openapi_check.check(method, path, status, headers, body)

    def bad(self, method, path, status, body, headers=JSON, match=""):
        with self.assertRaises(AssertionError) as cm:
            openapi_check.check(method, path, status, headers, body)
        self.assertIn(match, str(cm.exception))
        return str(cm.exception)

    def test_a_claim(self):
        self.ok("GET", "/v1/claims/" + CLAIM_ID, 200, claim_body())
        self.ok("DELETE", "/v1/claims/" + CLAIM_ID, 200, claim_body(state="released",
                                                                  reason="released by its holder"))
        # Missing, extra, retyped fields; a state out of the enum.
        body = json.loads(claim_body())
        del body["by"]
        self.bad("GET", "/v1/claims/x", 200, json.dumps(body).encode(), match="'by'")
        self.bad("GET", "/v1/claims/x", 200, claim_body(extra=1))
        self.bad("DELETE", "/v1/claims/x", 200, claim_body(priority="0"), match="priority")
        self.bad("DELETE", "/v1/claims/x", 200, claim_body(state="done"), match="state")
        self.bad("DELETE", "/v1/claims/x", 200, claim_body(created=None), match="created")
        self.bad("DELETE", "/v1/claims/x", 200, claim_body(lease=30), match="lease")
        # revoke_at only while revoking, and then always.
        self.bad("DELETE", "/v1/claims/x", 200, claim_body(state="revoking"))
        self.bad("DELETE", "/v1/claims/x", 200, claim_body(revoke_at=None))
        self.ok("DELETE", "/v1/claims/x", 200,
                claim_body(state="revoking", revoke_at="2026-11-26T10:00:30.000Z"))

    def test_status_path_and_content_type(self):
        self.bad("GET", "/v1/claims/x", 201, claim_body(), match="no 201")
        self.bad("GET", "/v1/nothing", 200, b"{}", match="no path")
        self.ok("GET", "/v1/nothing", 404,
                b'{"error":{"code":"not_found","message":"no such endpoint"}}')
        self.bad("GET", "/metrics", 200, b"x 1\n", headers={"content-type": "application/json"},
                 match="Content-Type")
        self.ok("GET", "/metrics?server=self", 200, b"x 1\n",
                headers={"content-type": "text/plain; version=0.0.4; charset=utf-8"})
        self.bad("DELETE", "/v1/semaphores/a", 204, b"{}", headers={})
        self.ok("DELETE", "/v1/semaphores/a/b", 204, b"", headers={})

    def test_errors(self):
        self.bad("GET", "/v1/claims/x", 404,
                 b'{"error":{"code":"no_such_thing","message":"m"}}', match="code")
        self.bad("GET", "/v1/claims/x", 404, b'{"error":{"code":"not_found"}}',
                 match="message")
        self.bad("PATCH", "/v1/claims/x", 405,
                 b'{"error":{"code":"method_not_allowed","message":"m"}}', match="Allow")
        self.ok("PATCH", "/v1/claims/x", 405,
                b'{"error":{"code":"method_not_allowed","message":"m"}}',
                headers={"content-type": "application/json", "allow": "GET, DELETE"})


class TestTour(unittest.TestCase):
    """Every operation of the document, reached at least once with the
    fixture's check on."""

    @classmethod
    def setUpClass(cls):
        cls.hits = set()
        real = openapi_check.check

        def recording(method, target, status, headers, body, body_read=True):
            template, _ = openapi_check.find_path(target)
            cls.hits.add((method.upper(), template, status))
            return real(method, target, status, headers, body, body_read=body_read)
        openapi_check.check = recording
        cls.real_check = real
        tok = "tok-secret-0123456789"
        cls.srv = Sluiced(config="tokens:\n  - name: admin\n    token: \"%s\"\n"
                                 "    admin: true\n" % tok, token=tok)

    @classmethod
    def tearDownClass(cls):
        openapi_check.check = cls.real_check
        cls.srv.stop()

    def test_tour(self):
        if not fx._openapi_enabled():
            self.skipTest("SLUICE_OPENAPI_CHECK=0")
        s = self.srv

        def want(r, status):
            self.assertEqual(r.status, status, r)
            return r

        # Operations.
        want(s.get("/healthz", token=""), 200)
        want(s.request("HEAD", "/healthz", token=""), 200)
        want(s.get("/v1/status"), 200)
        want(s.get("/metrics"), 200)
        want(s.get("/metrics?server=self"), 200)
        want(s.get("/v1/status", token=""), 401)
        want(s.post("/v1/status"), 405)
        want(s.get("/v1/whoami"), 200)
        want(s.post("/v1/whoami"), 405)
        # Semaphores, a pattern, a skip one.
        want(s.put("/v1/semaphores/%s" % q("oa/db"), {"limit": 1, "lease": "30s"}), 200)
        want(s.put("/v1/semaphores/oa/skip", {"limit": 2, "strategy": "skip",
                                              "overtake_limit": "1m"}), 200)
        want(s.put("/v1/semaphores/%s" % q("oa/pat-*"), {"limit": 3}), 200)
        want(s.get("/v1/semaphores/%s" % q("oa/pat-*")), 200)
        want(s.put("/v1/semaphores/oa/x", {"limit": 1, "limt": 2}), 400)
        want(s.get("/v1/semaphores/oa/nope"), 404)
        # Claims: a holder and a waiter, replayed with Idempotency-Key.
        key = {"Idempotency-Key": "oa-key-1"}
        a = want(s.post("/v1/claims", {"holder": "oa-a", "locks": [{"mutex": "oa/m"},
                                                                      {"semaphore": "oa/db"}],
                                       "tags": {"env": "test"}, "lease": "1m"},
                        headers=key), 201)
        self.assertTrue(a.headers["location"].endswith(a.json["id"]))
        again = want(s.post("/v1/claims", {"holder": "oa-a", "locks": [{"mutex": "oa/m"},
                                                                          {"semaphore": "oa/db"}],
                                           "tags": {"env": "test"}, "lease": "1m"},
                            headers=key), 201)
        self.assertEqual(again.headers.get("idempotent-replayed"), "true")
        want(s.post("/v1/claims", {"holder": "oa-other", "locks": [{"mutex": "oa/m"}]},
                    headers=key), 409)
        b = want(s.post("/v1/claims", {"holder": "oa-b", "locks": [{"mutex": "oa/m"}],
                                       "priority": 5}), 201).json
        self.assertEqual(b["state"], "pending")
        want(s.post("/v1/claims", {"holder": "oa-c", "locks": [{"semaphore": "oa/none"}]}),
             422)
        want(s.post("/v1/claims", {"holder": "oa-c", "locks": [{"mutex": "oa/m"}],
                                   "priorty": 1}), 400)
        aid, bid = a.json["id"], b["id"]
        want(s.get("/v1/mutexes"), 200)
        want(s.get("/v1/mutexes/oa/m"), 200)
        want(s.get("/v1/semaphores"), 200)
        want(s.get("/v1/semaphores/oa/db"), 200)
        want(s.get("/v1/semaphores/oa/skip"), 200)
        want(s.get("/v1/history?lock=sem/oa/db"), 200)
        want(s.get("/v1/history?lock=mtx/oa/m&window=24h"), 200)
        want(s.get("/v1/history?lock=sem/%s" % q("oa/pat-*")), 400)
        # Listings and a page.
        page = want(s.get("/v1/claims?limit=1"), 200).json
        self.assertIn("next", page)
        want(s.get("/v1/claims?limit=1&after=" + page["next"]), 200)
        want(s.get("/v1/claims?state=held&holder=oa-a"), 200)
        want(s.delete("/v1/claims?holder_prefix=oa-nobody/"), 200)
        want(s.delete("/v1/queue?holder_prefix=oa-nobody/"), 200)
        want(s.delete("/v1/claims"), 400)
        want(s.get("/v1/claims?lock=mtx/oa/m&limit=1"), 200)
        want(s.get("/v1/claims?after=zzz"), 400)
        want(s.get("/v1/queue"), 200)
        want(s.get("/v1/queue?lock=mtx/oa/m&limit=1"), 200)
        want(s.put("/v1/queue", {}), 405)
        # One claim: read, wait, why, renew.
        want(s.get("/v1/claims/" + aid), 200)
        want(s.get("/v1/claims/%s?wait=10ms&seen=held" % aid), 200)
        want(s.get("/v1/claims/%s?wait=10ms" % bid), 200)
        want(s.get("/v1/claims/%s?wiat=1s" % bid), 400)
        want(s.get("/v1/claims/%s/why" % bid), 200)
        want(s.get("/v1/claims/%s/why" % aid), 200)
        want(s.post("/v1/claims/%s/renew" % aid), 200)
        want(s.request("PATCH", "/v1/claims/" + aid), 405)
        want(s.get("/v1/claims/" + CLAIM_ID), 404)
        # A long poll, answered when the holder lets go.
        conn, resp = s.start_request("GET", "/v1/claims/%s?wait=20s&seen=pending" % bid)
        try:
            want(s.delete("/v1/claims/" + aid), 200)
            got = json.loads(resp.read())
            self.assertEqual(got["state"], "held")
        finally:
            conn.close()
        want(s.post("/v1/claims/%s/renew" % aid), 409)  # ended: the error and the claim
        want(s.post("/v1/claims/%s/cancel" % bid), 200)
        want(s.post("/v1/claims/%s/cancel" % bid), 200)
        want(s.get("/v1/claims/%s/cancel" % bid), 405)
        # A revoking claim, canceled.
        old = want(s.post("/v1/claims", {"holder": "oa-old", "group": "oa/g"}), 201).json
        new = want(s.post("/v1/claims", {"holder": "oa-new", "group": "oa/g",
                                         "cancel": "in-progress", "grace": "1h"}), 201).json
        self.assertEqual(want(s.get("/v1/claims/" + old["id"]), 200).json["state"], "revoking")
        want(s.post("/v1/claims/%s/renew" % old["id"]), 409)
        want(s.get("/v1/claims?state=revoking"), 200)
        want(s.delete("/v1/claims/" + old["id"]), 200)
        want(s.delete("/v1/claims/" + new["id"]), 200)
        # Events: a page, one claim's, a long poll, the stream.
        ev = want(s.get("/v1/events?since=0&limit=5"), 200).json
        self.assertTrue(ev["events"])
        want(s.get("/v1/events?claim=%s" % aid), 200)
        want(s.get("/v1/events?since=x"), 400)
        nxt = want(s.get("/v1/events?since=999999999"), 200).json["next"]
        conn, resp = s.start_request("GET", "/v1/events?since=%d&wait=20s" % nxt)
        try:
            want(s.put("/v1/semaphores/oa/other", {"limit": 4}), 200)
            self.assertTrue(json.loads(resp.read())["events"])
        finally:
            conn.close()
        conn, resp = s.start_request("GET", "/v1/events/stream?since=0")
        try:
            self.assertEqual(resp.status, 200)
            self.assertTrue(resp.readline().startswith(b"id: "))
        finally:
            conn.close()
        want(s.delete("/v1/semaphores/oa/other"), 204)
        want(s.delete("/v1/semaphores/%s" % q("oa/pat-*")), 204)
        # The dashboard, and paths that are none of these.
        want(s.get("/", token=""), 200)
        want(s.get("/queue", token=""), 200)
        want(s.get("/claims/" + aid, token=""), 200)
        want(s.get("/claims", token=""), 200)
        want(s.get("/locks/sem/oa/db", token=""), 200)
        want(s.get("/runs/nightly/42", token=""), 200)
        want(s.get("/ui/app.js", token=""), 200)
        want(s.get("/ui/nothing.js", token=""), 404)
        want(s.get("/v1/nothing"), 404)
        want(s.get("/nothing", token=""), 404)
        want(s.get("/v1/claims/%s/nothing" % aid), 404)

        ops = {(m, t) for m, t, _ in self.hits}
        missing = sorted(OPERATIONS - ops)
        self.assertEqual(missing, [], "operations the tour did not reach")


if __name__ == "__main__":
    fx.main()
