#!/usr/bin/env python3
"""test_event_scan.py - F2: no read of the event log holds the loop past
limits.max_event_scan events.

A read counts every event it passes over (another tenant's, another run's)
against the budget and answers a partial page ("partial": true) whose next
says where it stopped; paging on from next reaches every event the caller
may see. The long poll answers a partial page at once, and the stream goes
through the log a budget at a time. The budget here is 100 events, so that a
few hundred events show it.
"""
import json
import os
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sluiced_fixture as fx  # noqa: E402
from sluiced_fixture import ServerTestCase  # noqa: E402

ADMIN, TEAM_A, TEAM_B = "adm-secret-0123456789", "a-secret-0123456789", "b-secret-0123456789"
BUDGET = 100

CONFIG = """
limits:
  max_event_scan: %d
tokens:
  - {name: admin, token: "%s", admin: true}
  - {name: team-a, token: "%s", prefixes: ["team-a/"]}
  - {name: team-b, token: "%s", prefixes: ["team-b/"]}
""" % (BUDGET, ADMIN, TEAM_A, TEAM_B)


class TestEventScan(ServerTestCase):
    CONFIG = CONFIG
    TOKEN = ADMIN

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        srv = cls.srv
        # team-b's two claims lie behind and between ~400 events of team-a.
        cls.b_ids = []
        for round_ in range(2):
            for i in range(50):
                c = srv.request("POST", "/v1/claims", {"holder": "team-a/bulk", "locks": [
                    {"mutex": "team-a/m/%d/%d" % (round_, i)}]}, token=TEAM_A)
                assert c.status == 201, c
                r = srv.request("DELETE", "/v1/claims/%s" % c.json["id"], token=TEAM_A)
                assert r.status == 200, r
            b = srv.request("POST", "/v1/claims", {"holder": "team-b/ci",
                                                   "locks": [{"mutex": "team-b/m%d" % round_}]},
                            token=TEAM_B)
            assert b.status == 201, b
            cls.b_ids.append(b.json["id"])
        cls.log = cls.every_event(ADMIN)

    @classmethod
    def page(cls, token, since, **params):
        query = "&".join("%s=%s" % kv for kv in params.items())
        r = cls.srv.get("/v1/events?since=%d%s" % (since, "&" + query if query else ""),
                        token=token)
        assert r.status == 200, r
        return r.json

    @classmethod
    def logged(cls, pred):
        return [e for e in cls.log if pred(e)]

    @classmethod
    def every_event(cls, token, **params):
        """Pages from 0 the way a client must: on while a page is partial
        or full, until a page that is neither."""
        since, out, pages = 0, [], 0
        limit = params.setdefault("limit", 1000)
        while True:
            p = cls.page(token, since, **params)
            pages += 1
            assert p["next"] >= since, p
            # A claim's or a run's read starts where its span does.
            if "claim" not in params and "run" not in params:
                assert p["next"] - since <= BUDGET, (since, p)
            out.extend(p["events"])
            since = p["next"]
            if not p.get("partial") and len(p["events"]) < limit:
                # What the stream's test adds later is not in cls.log.
                return [e for e in out if not hasattr(cls, "log") or e["seq"] <= cls.log[-1]["seq"]]

    def test_a_sparse_page_is_partial_and_stops_at_the_budget(self):
        """team-b's page from 0 skips team-a's events: it stops after 100 of
        them, empty, with next at the last one it examined (it used to read
        the whole log for one page)."""
        p = self.page(TEAM_B, 0)
        self.assertEqual(p, {"events": [], "next": BUDGET, "partial": True})

    def test_paging_on_from_next_reaches_every_visible_event(self):
        mine = self.every_event(TEAM_B)
        self.assertEqual(mine, [e for e in self.log if e["holder"] == "team-b/ci"])
        self.assertEqual({e["claim"] for e in mine}, set(self.b_ids))

    def test_an_unscoped_page_takes_at_most_the_budget(self):
        p = self.page(ADMIN, 0, limit=1000)
        self.assertTrue(p["partial"])
        self.assertEqual([e["seq"] for e in p["events"]], list(range(1, BUDGET + 1)))
        self.assertEqual(p["next"], BUDGET)
        self.assertGreater(len(self.log), 3 * BUDGET)

    def test_a_run_with_no_claims_is_read_a_budget_at_a_time(self):
        """The review's repro: since=0&run=nope reads the whole log."""
        p = self.page(TEAM_A, 0, run="nope")
        self.assertEqual(p, {"events": [], "next": BUDGET, "partial": True})
        self.assertEqual(self.every_event(TEAM_A, run="nope"), [])
        self.assertEqual(self.every_event(TEAM_B, run="team-b/ci"),
                         [e for e in self.log if e["holder"] == "team-b/ci"])

    def test_a_long_poll_answers_a_partial_page_at_once(self):
        t0 = time.monotonic()
        r = self.srv.get("/v1/events?since=0&wait=20s", token=TEAM_B, timeout=10)
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json, {"events": [], "next": BUDGET, "partial": True})
        self.assertLess(time.monotonic() - t0, 10)

    def test_a_claims_events_past_the_budget(self):
        """A claim's read passes over the other claims' events in its span
        too: the page is partial and paging on finds the rest."""
        cid = self.b_ids[0]
        mine = self.every_event(TEAM_B, claim=cid)
        self.assertEqual(mine, [e for e in self.log if e["claim"] == cid])

    def test_a_sparse_stream_catches_up_a_budget_per_turn(self):
        """team-b's stream from 0 goes through team-a's events a budget at a
        time and delivers team-b's, then live ones."""
        want = [e for e in self.log if e["holder"] == "team-b/ci"]
        conn, resp = self.srv.start_request("GET", "/v1/events/stream?since=0", token=TEAM_B)
        try:
            self.assertEqual(resp.status, 200)
            got = read_sse(resp, len(want))
            self.assertEqual([d for _, d in got], want)
            c = self.srv.request("POST", "/v1/claims", {"holder": "team-b/ci",
                                                        "locks": [{"mutex": "team-b/live"}]},
                                 token=TEAM_B)
            live = read_sse(resp, 1)
            self.assertEqual(live[0][1]["claim"], c.json["id"])
        finally:
            conn.close()
        self.srv.request("DELETE", "/v1/claims/%s" % c.json["id"], token=TEAM_B)


class TestClaimEvents(ServerTestCase):
    """A claim's events, read with claim=ID, come from the records that hold
    them (the engine notes their seqs): a page or two however many other
    events lie between them. They used to be read by walking the log from
    the claim's arrival, a budget at a time: 100 events a page here, so the
    ~1500 others between each of its events made 15 pages of them."""
    CONFIG = CONFIG
    TOKEN = ADMIN
    OTHERS = 500  # claims made and ended between two events of the watched ones

    @classmethod
    def churn(cls):
        """3 * OTHERS events of team-a's: a claim each, made, then all ended
        at once. One connection for them all: a fresh one a request made
        this take seconds."""
        conn = cls.srv.connect()
        try:
            for i in range(cls.OTHERS):
                body = json.dumps({"holder": "team-a/churn", "locks": [
                    {"mutex": "team-a/c/%d" % i}]})
                conn.request("POST", "/v1/claims", body=body, headers={
                    "Authorization": "Bearer " + TEAM_A, "Content-Type": "application/json"})
                r = conn.getresponse()
                assert r.status == 201, r.read()
                r.read()
        finally:
            conn.close()
        r = cls.srv.request("DELETE", "/v1/claims?holder_prefix=team-a/churn", token=TEAM_A)
        assert r.status == 200 and r.json["released"] == cls.OTHERS, r

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        srv = cls.srv

        def claim(holder):
            r = srv.request("POST", "/v1/claims", {"holder": holder, "lease": "1h", "locks": [
                {"mutex": "team-b/early"}]}, token=TEAM_B)
            assert r.status == 201, r
            return r.json["id"]
        # holder holds; waiter waits through the churn, is granted, renewed
        # after more of it, and stays held; ended is released long after.
        cls.holder = claim("team-b/holder")
        cls.waiter = claim("team-b/waiter")
        cls.churn()
        assert srv.request("DELETE", "/v1/claims/" + cls.holder, token=TEAM_B).status == 200
        cls.churn()
        assert srv.request("POST", "/v1/claims/%s/renew" % cls.waiter, {},
                           token=TEAM_B).status == 200
        cls.churn()

    def read(self, cid, token=TEAM_B, limit=1000):
        """The claim's events from 0 the way the dashboard pages them, and
        the number of pages."""
        since, out, pages = 0, [], 0
        while True:
            r = self.srv.get("/v1/events?claim=%s&since=%d&limit=%d" % (cid, since, limit),
                             token=token)
            self.assertEqual(r.status, 200, r)
            pages += 1
            out.extend(r.json["events"])
            self.assertGreaterEqual(r.json["next"], since)
            since = r.json["next"]
            if not r.json.get("partial") and len(r.json["events"]) < limit:
                return out, pages

    def test_a_live_claims_events_far_apart_read_in_one_page(self):
        events, pages = self.read(self.waiter)
        self.assertEqual([e["type"] for e in events],
                         ["claim.queued", "claim.waiting", "claim.acquired", "claim.renewed"])
        self.assertGreater(events[-1]["seq"] - events[0]["seq"], 20 * BUDGET)
        self.assertLessEqual(pages, 2)

    def test_an_ended_claims_events_read_in_one_page(self):
        events, pages = self.read(self.holder)
        self.assertEqual([e["type"] for e in events], ["claim.queued", "claim.acquired",
                                                       "claim.released"])
        self.assertGreater(events[-1]["seq"] - events[0]["seq"], 5 * BUDGET)
        self.assertLessEqual(pages, 2)

    def test_one_event_a_page_and_another_tenants_token(self):
        whole, _ = self.read(self.waiter)
        one, pages = self.read(self.waiter, limit=1)
        self.assertEqual(one, whole)
        self.assertLessEqual(pages, len(whole) + 1)
        hidden, pages = self.read(self.waiter, token=TEAM_A)
        self.assertEqual(hidden, [])
        self.assertLessEqual(pages, 2)

    def test_z_after_a_restart_once_the_log_is_read_back(self):
        """A restored claim's seqs come back from the log (the history's
        rebuild reads it): its new events and its old ones, one page."""
        before, _ = self.read(self.waiter)
        self.srv.restart()
        fx.wait_until(lambda: not self.srv.get("/v1/history?lock=mtx/team-b/early")
                      .json["rebuilding"], 30, what="the history rebuilt")
        r = self.srv.request("POST", "/v1/claims/%s/renew" % self.waiter, {}, token=TEAM_B)
        self.assertEqual(r.status, 200, r)
        events, pages = self.read(self.waiter)
        self.assertEqual(events[:len(before)], before)
        self.assertEqual([e["type"] for e in events[len(before):]], ["claim.renewed"])
        self.assertLessEqual(pages, 2)


def read_sse(resp, n):
    """Reads n events from a text/event-stream response: (id, data)."""
    out, ident, data = [], None, None
    while len(out) < n:
        line = resp.readline()
        assert line, "the stream ended early"
        line = line.decode("utf-8").rstrip("\n")
        if line.startswith(":"):
            continue
        if line == "":
            if ident is not None:
                out.append((ident, data))
            ident, data = None, None
        elif line.startswith("id: "):
            ident = int(line[4:])
        elif line.startswith("data: "):
            data = json.loads(line[6:])
    return out


if __name__ == "__main__":
    fx.main()
