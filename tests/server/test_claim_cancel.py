"""test_claim_cancel.py - POST /v1/claims/{id}/cancel, an operator's cancel
(docs/api.md), against a real sluiced.

A pending, a held and a revoking claim each end `canceled` with the reason
"canceled by an operator" (not the client's own "withdrawn"/"released"),
and what they held or waited for moves on at once; an ended claim is
answered unchanged; an unknown id is 404; another method is 405 with
Allow: POST; a limited token may cancel only the claims it may release;
while the store cannot commit the cancel is refused (503) and the claim is
untouched; a waiter on the claim hears the cancel at once; /metrics counts
the route under its own label."""
import os
import sys
import threading
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sluiced_fixture import ServerTestCase, wait_until  # noqa: E402

OPERATOR = "canceled by an operator"


class TestCancel(ServerTestCase):

    def cancel(self, cid, expect=200, **kw):
        r = self.srv.post("/v1/claims/%s/cancel" % cid, **kw)
        self.assertEqual(r.status, expect, r)
        return r.json

    def test_pending_claim_is_canceled_not_withdrawn(self):
        held = self.srv.claim("c-held", [("m", "cx/p")])
        waiting = self.srv.claim("c-wait", [("m", "cx/p")])
        self.assertEqual(waiting["state"], "pending")
        got = self.cancel(waiting["id"])
        self.assertEqual((got["id"], got["state"], got["reason"]),
                         (waiting["id"], "canceled", OPERATOR))
        self.assertEqual(self.srv.claim_get(waiting["id"]), got)
        self.assertEqual(self.srv.get("/v1/queue?lock=mtx/cx/p").json["queue"], [])
        evs = [e for e in self.srv.all_events(0) if e.get("claim") == waiting["id"]]
        self.assertEqual((evs[-1]["type"], evs[-1]["reason"]), ("claim.canceled", OPERATOR))
        self.srv.release(held["id"])

    def test_held_claim_is_canceled_and_the_next_is_let_in(self):
        held = self.srv.claim("c-h1", [("m", "cx/h")])
        nxt = self.srv.claim("c-h2", [("m", "cx/h")])
        got = self.cancel(held["id"])
        self.assertEqual((got["state"], got["reason"]), ("canceled", OPERATOR))
        # Effects are immediate: the next claim already holds.
        self.assertEqual(self.srv.claim_get(nxt["id"])["state"], "held")
        # Ended: the same again, unchanged (like DELETE), and DELETE too.
        self.assertEqual(self.cancel(held["id"]), got)
        self.assertEqual(self.srv.release(held["id"]), got)
        self.srv.release(nxt["id"])
        released = self.srv.claim_get(nxt["id"])
        self.assertEqual(self.cancel(nxt["id"]), released)

    def test_revoking_claim_is_canceled(self):
        old = self.srv.claim("c-old", group="cx/g")
        new = self.srv.claim("c-new", group="cx/g", cancel="in-progress", grace="1h")
        self.assertEqual(self.srv.claim_get(old["id"])["state"], "revoking")
        got = self.cancel(old["id"])
        self.assertEqual((got["state"], got["reason"]), ("canceled", OPERATOR))
        self.assertEqual(self.srv.claim_get(new["id"])["state"], "held")
        self.srv.release(new["id"])

    def test_a_waiter_on_the_claim_hears_it_at_once(self):
        held = self.srv.claim("c-w", [("m", "cx/w")], lease="1m")
        got = {}

        def wait():
            got["r"] = self.srv.get("/v1/claims/%s?wait=20s&seen=held" % held["id"])
        t = threading.Thread(target=wait)
        t.start()
        # Parked before the cancel or not, a wait with seen=held answers as
        # soon as the claim is canceled, long before its 20 s.
        self.cancel(held["id"])
        t.join(10)
        self.assertFalse(t.is_alive())
        self.assertEqual((got["r"].json["state"], got["r"].json["reason"]),
                         ("canceled", OPERATOR))

    def test_unknown_id_and_other_methods(self):
        r = self.srv.post("/v1/claims/AAAAAAAAAAAAAAAAAAAAAA/cancel")
        self.assertError(r, 404, "not_found")
        c = self.srv.claim("c-m", [("m", "cx/m")])
        for method in ("GET", "DELETE", "PUT"):
            r = self.srv.request(method, "/v1/claims/%s/cancel" % c["id"])
            self.assertError(r, 405, "method_not_allowed")
            self.assertEqual(r.headers.get("allow"), "POST")
        self.assertEqual(self.srv.claim_get(c["id"])["state"], "held")
        self.srv.release(c["id"])

    def test_metrics_count_the_route(self):
        c = self.srv.claim("c-metrics", [("m", "cx/metrics")])
        self.cancel(c["id"])
        text = self.srv.get("/metrics").body.decode()
        self.assertRegex(text, r'sluice_http_requests_total\{route="/v1/claims/\{id\}/cancel",'
                               r'method="POST",status="200"\} [1-9]')


class TestCancelAuth(ServerTestCase):
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

    def test_same_rule_as_delete(self):
        mine = self.srv.claim("ta", [("m", "team-a/x")])
        other = self.srv.claim("tb", [("m", "team-b/x")])
        r = self.srv.post("/v1/claims/%s/cancel" % other["id"], token="a-secret-0123456789")
        self.assertError(r, 404, "not_found")  # as a claim that does not exist (F8)
        self.assertEqual(self.srv.claim_get(other["id"])["state"], "held")
        r = self.srv.post("/v1/claims/%s/cancel" % mine["id"], token="")
        self.assertError(r, 401, "unauthorized")
        r = self.srv.post("/v1/claims/%s/cancel" % mine["id"], token="a-secret-0123456789")
        self.assertEqual((r.status, r.json["state"]), (200, "canceled"), r)
        r = self.srv.post("/v1/claims/%s/cancel" % other["id"])  # admin
        self.assertEqual((r.status, r.json["state"]), (200, "canceled"), r)


class TestCancelStoreFailure(ServerTestCase):

    def test_refused_while_the_store_cannot_commit(self):
        srv = self.srv
        c = srv.claim("c-sf", [("m", "cx/sf")])
        srv.block_commits("cx_block")
        try:
            # A change to make the store fail, then the cancel is refused at once.
            r = srv.post("/v1/claims", {"holder": "during", "locks": [{"mutex": "cx/sf2"}]})
            self.assertEqual(r.status, 503, r)
            r = srv.post("/v1/claims/%s/cancel" % c["id"])
            self.assertError(r, 503, "unavailable")
        finally:
            srv.unblock_commits("cx_block")
        wait_until(lambda: srv.get("/healthz").status == 200, 15,
                   what="/healthz 200 after the store recovers")
        self.assertEqual(srv.claim_get(c["id"])["state"], "held")
        self.assertEqual(srv.post("/v1/claims/%s/cancel" % c["id"]).json["state"], "canceled")


if __name__ == "__main__":
    unittest.main(verbosity=2)
