#!/usr/bin/env python3
"""test_errors.py - what sluiced answers to requests that are wrong.

Every refusal names the field, the value as it was sent and what would be
accepted (docs/api.md, Errors): unknown fields with the field probably
meant, numbers out of range with the range, durations with what is wrong
with them (negative, a day unit, too long), control characters with their
place, slots above a limit with both numbers. Unknown or repeated query
parameters are refused as unknown body fields are. Names with "." or ".."
segments are refused; a catch-all pattern does not reach the tag and group
namespaces; a pattern in use says which semaphore made from it is busy;
leases below the floor are refused; an events cursor past the end reads
from the end. Each case is a defect a user found, with the message they got.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sluiced_fixture as fx  # noqa: E402
from sluiced_fixture import ServerTestCase, q  # noqa: E402


class ErrorCase(ServerTestCase):
    def refused(self, body, *parts, path="/v1/claims", method="POST", status=400):
        """Sends body and checks the error message holds every part."""
        r = self.srv.request(method, path, body=body)
        self.assertError(r, status)
        msg = r.json["error"]["message"]
        for part in parts:
            self.assertIn(part, msg, "%s %s: %r lacks %r" % (method, path, msg, part))
        return msg


class TestClaimBodyMessages(ErrorCase):
    def setUp(self):
        self.srv.sem_put("e/sem4", 4)

    def claim(self, **fields):
        body = {"holder": "x", "locks": [{"mutex": "e/m"}]}
        body.update(fields)
        return body

    def test_unknown_field_suggests_the_right_one(self):
        self.refused(self.claim(priorty=3), 'unknown field "priorty"',
                     'did you mean "priority"?', "holder, locks, priority")
        self.refused(self.claim(laese="30s"), 'unknown field "laese"', '"lease"')
        msg = self.refused(self.claim(zzzzzz=1), 'unknown field "zzzzzz"')
        self.assertNotIn("did you mean", msg)
        self.refused({"holder": "x", "locks": [{"mutex": "m", "slot": 2}]},
                     'locks[0]: unknown field "slot"', 'did you mean "slots"?',
                     '{"mutex": NAME}')

    def test_numbers_name_their_range_and_value(self):
        self.refused({"holder": "x", "locks": [{"semaphore": "e/sem4", "slots": 1e12}]},
                     "locks[0].slots must be a whole number from 1 to 1000000000",
                     "not 1000000000000")
        self.refused({"holder": "x", "locks": [{"semaphore": "e/sem4", "slots": 0}]},
                     "locks[0].slots", "not 0")
        self.refused(self.claim(priority=2147483648),
                     "priority must be a whole number from -2147483648 to 2147483647",
                     "not 2147483648")
        self.refused(self.claim(priority="high"), "priority", 'not "high"')

    def test_durations_say_what_is_wrong(self):
        self.refused(self.claim(timeout="-5s"), "timeout", '"-5s"', "negative")
        self.refused(self.claim(timeout="1d"), "timeout", '"1d"', "day unit", "24h")
        self.refused(self.claim(timeout="999999h"), "timeout", "longer than 100 years")
        self.refused(self.claim(timeout="1m30"), "without its unit", "1m30s")
        self.refused(self.claim(grace=-1), "grace", "negative")
        self.refused(self.claim(wait=[1]), "wait must be a duration", "not [1]")
        self.refused(self.claim(lease="5us"), "lease", "finer than a millisecond")

    def test_strings(self):
        self.refused({"holder": "a\nb", "locks": [{"mutex": "m"}]},
                     "holder has a control character (byte 0x0a) at position 2")
        # F15: a right-to-left override would show "team-a/\u202ekcatta" as team-a/attack.
        self.refused({"holder": "team-a/\u202ekcatta", "locks": [{"mutex": "m"}]},
                     "holder has a bidirectional control character (U+202E) at byte 8")
        self.refused(self.claim(rebalance_key="a\u2066b"),
                     "rebalance_key has a bidirectional control character (U+2066) at byte 2")
        ok = self.srv.post("/v1/claims", {"holder": "caf\u00e9-\u2014-\u65e5",
                                          "locks": [{"mutex": "text/unicode"}]})
        self.assertEqual(ok.status, 201, ok)
        self.srv.release(ok.json["id"])
        self.refused({"holder": "", "locks": [{"mutex": "m"}]}, "holder is empty")
        self.refused({"locks": [{"mutex": "m"}]}, "holder is required")
        self.refused({"holder": 7, "locks": [{"mutex": "m"}]}, "holder must be a string",
                     "not 7")
        self.refused(self.claim(rebalance_key=5), "rebalance_key must be a string", "not 5")
        self.refused(self.claim(group=5), "group must be a string", "not 5")
        self.refused(self.claim(cancel="inprogress", group="g"),
                     'cancel must be "none", "pending" or "in-progress"', 'not "inprogress"')
        self.refused(self.claim(tags={"env": 1}), "tags.env must be a string", "not 1")

    def test_slots_above_the_limit_give_both_numbers(self):
        self.refused({"holder": "x", "locks": [{"semaphore": "e/sem4", "slots": 5}]},
                     "locks[0] (e/sem4)", "asks for 5 slots", "limit is 4",
                     "at most 4")

    def test_semaphore_body(self):
        self.refused({}, "limit is required", '{"limit": N}', path="/v1/semaphores/e1",
                     method="PUT")
        self.refused({"limit": -1}, "limit must be a whole number from 0", "not -1",
                     path="/v1/semaphores/e1", method="PUT")
        self.refused({"limit": 1, "strategy": "fifo"}, "strategy must be", 'not "fifo"',
                     path="/v1/semaphores/e1", method="PUT")
        self.refused({"limit": 1, "lmit": 2}, 'unknown field "lmit"', path="/v1/semaphores/e1",
                     method="PUT")

    def test_lease_floor(self):
        self.refused(self.claim(lease="1ms"), "lease", "shorter than 100ms", "0 for none")
        self.refused({"limit": 1, "lease": "50ms"}, "shorter than 100ms",
                     path="/v1/semaphores/e/lease", method="PUT")
        ok = self.srv.claim("x", [("m", "e/lease-ok")], lease="100ms")
        self.assertEqual(ok["lease"], "100ms")
        self.srv.release(ok["id"])
        none = self.srv.claim("x", [("m", "e/lease-none")], lease="0")
        self.assertEqual(none["lease"], "0")
        self.srv.release(none["id"])


class TestQueryParameters(ErrorCase):
    def test_unknown_and_repeated_parameters(self):
        c = self.srv.claim("qp", [("m", "qp/m")])
        for path, takes in (("/v1/claims?foo=1", "state, holder, run, lock, order, limit and after"),
                            ("/v1/queue?loc=mtx/x", "lock, limit and after"),
                            ("/v1/events?sice=3", "since, claim, run, limit and wait"),
                            ("/v1/claims/%s?wiat=20s" % c["id"], "wait and seen"),
                            ("/v1/semaphores?x=1", "no query parameters"),
                            ("/v1/mutexes/qp/m?verbose=1", "takes only limit"),
                            ("/v1/mutexes?verbose=1", "no query parameters"),
                            ("/healthz?full=1", "no query parameters")):
            r = self.srv.get(path)
            self.assertError(r, 400, "bad_request", "unknown query parameter")
            self.assertIn(takes, r.json["error"]["message"], path)
        self.assertError(self.srv.delete("/v1/claims/%s?force=1" % c["id"]), 400, "bad_request",
                         "unknown query parameter")
        self.assertEqual(self.srv.claim_get(c["id"])["state"], "held")
        self.assertError(self.srv.get("/v1/claims/%s?wait=1s&wait=2s" % c["id"]), 400,
                         "bad_request", "given twice")
        self.assertError(self.srv.get("/v1/claims/%s?wait=1d" % c["id"]), 400, "bad_request",
                         "day unit")
        self.srv.release(c["id"])

    def test_events_cursor_past_the_end_reads_from_the_end(self):
        self.srv.claim("ev", [("m", "qp/ev")])
        evs = self.srv.all_events(0)
        end = evs[-1]["seq"]
        page = self.srv.get("/v1/events?since=999999").json
        self.assertEqual(page, {"events": [], "next": end})
        # The next event is seen by a client that pages on from "next".
        c = self.srv.claim("ev2", [("m", "qp/ev2")])
        page = self.srv.get("/v1/events?since=%d" % page["next"]).json
        self.assertEqual(page["events"][0]["claim"], c["id"])


class TestRuleMessages(ErrorCase):
    """S11, S12: refusals of the scheduling rules that said too little, or
    the wrong thing; each now names the field, the value and the mend."""

    def test_a_queue_over_a_lowered_max_pending_counts_its_waiters(self):
        s = "e/full"
        self.srv.sem_put(s, 1, max_pending=3)
        ids = [self.srv.claim("x", [("s", s, 1)])["id"] for _ in range(3)]
        self.srv.sem_put(s, 1, max_pending=1)
        r = self.srv.post("/v1/claims", {"holder": "x", "locks": [{"semaphore": s}]})
        self.assertError(r, 409, "queue_full",
                         contains="max_pending is 1 and 2 claims wait; retry later, or raise "
                                  "max_pending")
        for cid in ids:
            self.srv.release(cid)

    def test_a_time_before_1970_says_so(self):
        self.refused({"holder": "x", "locks": [{"mutex": "e/m"}],
                      "created": "0001-01-01T00:00:00Z"},
                     'created "0001-01-01T00:00:00Z" is before 1970-01-01T00:00:00Z')
        self.refused({"holder": "x", "locks": [{"mutex": "e/m"}], "created": "0001-13-01"},
                     "an RFC 3339 time")

    def test_queue_clear_names_a_bad_lock_key(self):
        self.refused(None, 'lock="builds" is not a lock key: use mtx/NAME or sem/NAME',
                     path="/v1/queue?lock=builds", method="DELETE")
        self.refused(None, 'lock="sem/group/pr-*" is a pattern',
                     path="/v1/queue?lock=" + q("sem/group/pr-*"), method="DELETE")
        self.refused(None, "is a pattern", path="/v1/queue?lock=" + q("sem/group/pr-*"),
                     method="GET")

    def test_groups_are_counted_and_named(self):
        self.refused({"holder": "x", "groups": []}, "in locks, tags, group or groups")
        eight = [{"name": "g%d" % i} for i in range(8)]
        self.refused({"holder": "x", "group": "g", "groups": eight},
                     "group and groups name 9 groups in all; a claim has at most 8")
        self.refused({"holder": "x", "groups": eight + [{"name": "g8"}]},
                     "groups has 9 groups; a claim has at most 8")

    def test_slots_above_a_limit_give_the_mend_that_works(self):
        self.refused({"holder": "x", "locks": [{"semaphore": "e/inl", "limit": 2, "slots": 3}]},
                     "ask for at most 2, or give a larger inline limit",
                     "configure it with PUT /v1/semaphores/{name} to raise it")
        self.srv.sem_put("e/two", 2)
        msg = self.refused({"holder": "x", "locks": [{"semaphore": "e/two", "slots": 3}]},
                           "ask for at most 2, or raise the semaphore's limit first")
        self.assertNotIn("inline", msg)

    def test_weights_refuse_control_characters(self):
        self.refused({"limit": 4, "strategy": "rebalanced", "weights": {"a\u0001": 2}},
                     "weights: a rebalance key has a control character (byte 0x01) at "
                     "position 2", path="/v1/semaphores/e%2Fw", method="PUT")
        self.assertEqual(self.srv.get("/v1/semaphores/e%2Fw").status, 404)

    def test_a_preemption_reservation_says_so(self):
        s = "e/skip-pre"
        self.srv.sem_put(s, 3, strategy="skip", overtake_limit="0", preempt=True)
        low = self.srv.claim("low", [("s", s, 2)], priority=-1)
        urgent = self.srv.claim("urgent", [("s", s, 3)], priority=10)
        self.assertEqual(self.srv.claim_get(low["id"])["state"], "revoking")
        small = self.srv.claim("small", [("s", s, 1)])
        self.assertIn("kept for the first claim in the queue, which preempted holders to get "
                      "them", small["reason"])
        self.assertNotIn("overtake limit", small["reason"])
        for c in (small, urgent, low):
            self.srv.release(c["id"])


class TestNames(ErrorCase):
    def test_dot_segments_are_refused(self):
        for name in ("team-a/../team-b/deploy", "a/./b", "..", "x/.."):
            self.refused({"holder": "x", "locks": [{"mutex": name}]}, "'.' or '..' segment")
        self.refused({"limit": 1}, "'.' or '..' segment",
                     path="/v1/semaphores/team-a%2F..%2F..%2Fteam-b%2Fdb", method="PUT")
        self.refused({"holder": "x", "group": "../g"}, "group")
        ok = self.srv.claim("x", [("m", "v1.2/..x/a.b")])
        self.assertEqual(ok["state"], "held")
        self.srv.release(ok["id"])

    def test_catch_all_pattern_leaves_groups_and_tags_alone(self):
        self.srv.sem_put("*", 3)
        try:
            a = self.srv.claim("g1", group="star/pr-1")
            b = self.srv.claim("g2", group="star/pr-1")
            self.assertEqual([a["state"], b["state"]], ["held", "pending"])
            self.assertEqual(a["locks"], [{"kind": "mutex", "name": "group/star/pr-1",
                                           "slots": 1, "token": a["locks"][0]["token"],
                                           "position": None}])
            t = self.srv.claim("t", tags={"env": "dev"})
            self.assertEqual(t["locks"], [])
            self.assertEqual(self.srv.get("/v1/semaphores/tag/env=dev").status, 404)
            self.assertEqual(self.srv.get("/v1/semaphores/anything").json["from_pattern"], "*")
            for c in (a, b, t):
                self.srv.release(c["id"])
        finally:
            self.srv.delete("/v1/semaphores/" + q("*"))

    def test_pattern_in_use_says_which_semaphore(self):
        self.srv.sem_put("pat/*", 1)
        c = self.srv.claim("p", [("s", "pat/x", 1)])
        msg = self.refused(None, "pat/x", "made from the pattern", "holders or waiters",
                           path="/v1/semaphores/" + q("pat/*"), method="DELETE", status=409)
        self.assertNotIn("the semaphore has holders", msg)
        self.srv.release(c["id"])
        self.assertEqual(self.srv.delete("/v1/semaphores/" + q("pat/*")).status, 204)


if __name__ == "__main__":
    fx.main()
