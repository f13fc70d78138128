#!/usr/bin/env python3
"""test_crash.py - kill -9 at random moments; what the server said must hold.

Client threads claim (with wait) and release on a few mutexes and a
semaphore and record only what the server TOLD them: claims answered held
with their tokens, releases answered done, events served. Then sluiced is
killed with SIGKILL at a random moment and restarted on the same store, and
the test checks docs/engine.md's durability promises:

  - every claim reported held, and not reported released, is still held with
    the same tokens (no leases are used here, so none may run out);
  - every claim reported ended stays ended in that state;
  - tokens never go backwards: each lock's counter is at least every token
    seen, and a new grant on each lock gets a greater token;
  - the event log is gapless (seq 1..N) across the restart, every event
    served before the crash is in it unchanged, and the first new event
    after the restart is the next seq;
  - the pending claims of a fixed queue keep their order and positions;
  - nothing is held that no one can account for.

The kill/restart cycle repeats (15 cycles by default, bounded to about 60 s:
what CI's release run runs) with a seed printed at the start;
SLUICE_CRASH_SEED replays a run and SLUICE_CRASH_CYCLES sets the number of
rounds (the time budget then grows with it, 6 s a round). The ASan run sets
5 (tests/server/CMakeLists.txt): every round goes through the same code (the
clients' traffic, a kill at a random moment, the restart's recovery from the
store, the checks' reads), so ASan sees all of it in each round, and what
more rounds add is more moments of the kill, which the release run's 15
rounds try.

TestCrashFull runs the same rounds against --durability full (8 by default,
some 12 s; SLUICE_CRASH_CYCLES sets both classes' rounds): its commits take
another path (the append on the loop, the group fdatasync on the writer
thread, answers only after the sync, a log segment filled with zeros
ahead), and a kill can land between those steps. PostgreSQL stores have no
such path (both durabilities wait for its own commit): it runs on SQLite
only.
TestTornTail checks what a restart says of the log file's tail: a torn
write is cut and the bytes it cut are logged; the zeros of a full segment
are cut without a word. The long run by hand is

    SLUICE_CRASH_CYCLES=100 SLUICED=build/release/src/server/sluiced \
        python3 tests/server/test_crash.py
"""
import collections
import http.client
import json
import os
import random
import threading
import time
import unittest

import sluiced_fixture as fx
from sluiced_fixture import Sluiced, q

MUTEXES = ["crash/m0", "crash/m1", "crash/m2"]
POOL = "crash/pool"  # a semaphore of limit 2
LOCK_SETS = [
    [("m", "crash/m0")], [("m", "crash/m1")], [("m", "crash/m2")],
    [("s", POOL, 1)], [("s", POOL, 2)],
    [("m", "crash/m0"), ("s", POOL, 1)], [("m", "crash/m1"), ("m", "crash/m2")],
    [("m", "crash/m2"), ("m", "crash/m0"), ("s", POOL, 1)],
]
THREADS = 4
QUEUE_LOCK = "crash/q"
BUDGET_S = 60.0
ERRORS = (OSError, http.client.HTTPException, ValueError)
TORN_LINE = "bytes after its last whole record were cut off"  # sluiced's warning


def lock_key(kind, name):
    return ("mtx/" if kind == "mutex" else "sem/") + name


class Ledger:
    """What the server told the clients, shared by the threads."""

    def __init__(self):
        self.mu = threading.Lock()
        self.held = {}        # id -> {lock key: token}: answered held, no end answered
        self.ended = {}       # id -> final state answered (released, withdrawn, ...)
        self.live = set()     # ids known to the clients, not answered ended
        self.in_flight = set()  # ids whose DELETE was sent but not answered
        self.unsure = set()   # holders whose POST was sent but not answered
        self.max_token = collections.defaultdict(int)
        self.events = {}      # seq -> (type, claim) as served

    def saw_claim(self, c):
        """Records the tokens of a claim the server answered with."""
        for lk in c["locks"]:
            if lk["token"] is not None:
                k = lock_key(lk["kind"], lk["name"])
                self.max_token[k] = max(self.max_token[k], lk["token"])


class Client(threading.Thread):
    """Claims with wait, holds a moment, releases; stops at the first error
    (the server died)."""

    def __init__(self, port, ledger, tid, rng, stop):
        super().__init__(daemon=True)
        self.port, self.ledger = port, ledger
        self.tid, self.rng, self.stop = tid, rng, stop
        self.n = 0

    def http(self, method, path, body=None):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=20)
        try:
            data = json.dumps(body).encode() if body is not None else None
            conn.request(method, path, body=data,
                         headers={"Content-Type": "application/json"} if data else {})
            resp = conn.getresponse()
            loc = resp.getheader("Location")
            if loc:  # the headers of a waiting POST: the claim exists
                with self.ledger.mu:
                    self.ledger.live.add(loc.rsplit("/", 1)[1])
            payload = resp.read()
            return resp.status, json.loads(payload) if payload else None
        finally:
            conn.close()

    def run(self):
        L = self.ledger
        try:
            while not self.stop.is_set():
                self.n += 1
                holder = "crash/c%d/%d" % (self.tid, self.n)
                locks = self.rng.choice(LOCK_SETS)
                with L.mu:
                    L.unsure.add(holder)
                status, c = self.http("POST", "/v1/claims", {
                    "holder": holder, "locks": [fx.lock_json(l) for l in locks],
                    "wait": "%dms" % self.rng.randrange(50, 600)})
                if status != 201:
                    raise AssertionError("POST answered %d %r" % (status, c))
                with L.mu:
                    L.unsure.discard(holder)
                    L.saw_claim(c)
                    L.live.add(c["id"])
                    if c["state"] == "held":
                        L.held[c["id"]] = {lock_key(l["kind"], l["name"]): l["token"]
                                           for l in c["locks"]}
                if c["state"] == "held" and self.rng.random() < 0.5:
                    time.sleep(self.rng.random() * 0.03)  # the client works a moment
                with L.mu:
                    L.in_flight.add(c["id"])
                status, fin = self.http("DELETE", "/v1/claims/" + c["id"])
                if status != 200:
                    raise AssertionError("DELETE answered %d %r" % (status, fin))
                with L.mu:
                    L.in_flight.discard(c["id"])
                    L.live.discard(c["id"])
                    L.held.pop(c["id"], None)
                    L.saw_claim(fin)
                    L.ended[c["id"]] = fin["state"]
        except ERRORS:
            return  # killed mid-request: the outcome is unknown


class EventReader(threading.Thread):
    """Follows the event log with long polls, recording what was served."""

    def __init__(self, port, ledger, since, stop):
        super().__init__(daemon=True)
        self.port, self.ledger, self.since, self.stop = port, ledger, since, stop

    def run(self):
        try:
            while not self.stop.is_set():
                conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=20)
                try:
                    conn.request("GET", "/v1/events?since=%d&wait=2s&limit=5000" % self.since)
                    page = json.loads(conn.getresponse().read())
                finally:
                    conn.close()
                with self.ledger.mu:
                    for e in page["events"]:
                        self.ledger.events[e["seq"]] = (e["type"], e["claim"])
                self.since = page["next"]
        except ERRORS:
            return


class TestCrash(unittest.TestCase):
    DURABILITY = None  # the server's default, normal
    CYCLES = 15

    def setUp(self):
        self.seed = int(os.environ.get("SLUICE_CRASH_SEED") or random.randrange(1 << 31))
        self.cycles = int(os.environ.get("SLUICE_CRASH_CYCLES") or self.CYCLES)
        self.budget_s = 6.0 * self.cycles if "SLUICE_CRASH_CYCLES" in os.environ else \
            BUDGET_S * self.CYCLES / 15
        print("\ntest_crash: seed %d, %d cycles, durability %s (SLUICE_CRASH_SEED=%d to replay)"
              % (self.seed, self.cycles, self.DURABILITY or "normal", self.seed), flush=True)
        self.rng = random.Random(self.seed)
        self.srv = Sluiced(durability=self.DURABILITY)
        self.ledger = Ledger()

    def tearDown(self):
        try:
            self.srv.stop()  # SIGTERM: exit status 0 required
        except fx.ServerFailure:
            self.srv.dump_stderr("at the final stop (seed %d)" % self.seed)
            raise

    # ---- the fixed queue -------------------------------------------------

    def make_queue(self):
        """A mutex held for the whole test and five waiters of mixed priority
        and created times; returns (holder, ids in expected queue order)."""
        s = self.srv
        hold = s.claim("crash/qholder", [("m", QUEUE_LOCK)])
        spec = [("p1", 0, "2099-01-01T00:00:03.000Z"), ("p2", 2, "2099-01-01T00:00:05.000Z"),
                ("p3", 0, "2099-01-01T00:00:01.000Z"), ("p4", 0, "2099-01-01T00:00:01.000Z"),
                ("p5", -1, "2099-01-01T00:00:00.000Z")]
        ids = {}
        for name, prio, created in spec:
            c = s.claim("crash/" + name, [("m", QUEUE_LOCK)], priority=prio, created=created)
            self.assertEqual(c["state"], "pending")
            ids[name] = c["id"]
        self.ledger.saw_claim(hold)
        return hold, [ids[n] for n in ("p2", "p3", "p4", "p1", "p5")]

    # ---- checks after a restart -----------------------------------------

    def check_after_restart(self, cycle, hold, order, log_before):
        s, L = self.srv, self.ledger
        where = "cycle %d (seed %d)" % (cycle, self.seed)
        # Claims answered held (and not answered ended) still hold, same tokens.
        for cid, toks in L.held.items():
            c = s.claim_get(cid)
            if cid in L.in_flight:
                self.assertIn(c["state"], ("held", "released"), where)
                if c["state"] == "released":
                    continue
            self.assertEqual(c["state"], "held", "%s: claim %s answered held" % (where, cid))
            self.assertEqual({lock_key(l["kind"], l["name"]): l["token"] for l in c["locks"]},
                             toks, where)
        # Claims answered ended stay so.
        for cid, state in L.ended.items():
            self.assertEqual(s.claim_get(cid)["state"], state, "%s: claim %s" % (where, cid))
        # The fixed queue: holder and order unchanged.
        h = s.claim_get(hold["id"])
        self.assertEqual((h["state"], h["locks"]), ("held", hold["locks"]), where)
        qq = s.get("/v1/queue?lock=mtx/" + q(QUEUE_LOCK)).json["queue"]
        self.assertEqual([(e["id"], e["position"]) for e in qq],
                         [(cid, i + 1) for i, cid in enumerate(order)], where)
        full = [e["id"] for e in s.get("/v1/queue").json["queue"] if e["id"] in order]
        self.assertEqual(full, order, where)
        # Tokens never went backwards.
        for key, tok in L.max_token.items():
            kind, name = key.split("/", 1)
            lock = s.get("/v1/%s/%s" % ("mutexes" if kind == "mtx" else "semaphores", name)).json
            self.assertGreaterEqual(lock["token"], tok, "%s: %s counter" % (where, key))
        # The event log: gapless, and holding everything served before.
        log = s.all_events(0)
        seqs = [e["seq"] for e in log]
        self.assertEqual(seqs, list(range(1, len(log) + 1)), "%s: gaps in the log" % where)
        self.assertGreaterEqual(len(log), log_before, where)
        by_seq = {e["seq"]: (e["type"], e["claim"]) for e in log}
        for seq, ev in L.events.items():
            self.assertEqual(by_seq.get(seq), ev, "%s: event %d as served" % (where, seq))
        return len(log)

    def clean_up(self, cycle):
        """Ends what the crash left unaccounted for, then checks that no
        lock is held or waited for by anyone but the fixed queue."""
        s, L = self.srv, self.ledger
        stray = set(L.live) | set(L.in_flight)
        for holder in L.unsure:
            stray.update(c["id"] for c in s.get("/v1/claims?holder=" + q(holder)).json["claims"])
        for cid in stray:
            fin = s.release(cid)
            L.saw_claim(fin)
            L.ended[cid] = fin["state"]
            L.held.pop(cid, None)
        L.live.clear()
        L.in_flight.clear()
        L.unsure.clear()
        self.assertEqual(L.held, {})
        where = "cycle %d (seed %d)" % (cycle, self.seed)
        for m in MUTEXES:
            lk = s.get("/v1/mutexes/" + m).json
            self.assertEqual((lk["used"], lk["pending"]), (0, []), "%s: %s" % (where, m))
        lk = s.get("/v1/semaphores/" + POOL).json
        self.assertEqual((lk["used"], lk["pending"]), (0, []), "%s: %s" % (where, POOL))

    def fresh_grants(self, cycle, log_len):
        """A new grant on every lock has a token above all seen; the first new
        event is the next seq."""
        s, L = self.srv, self.ledger
        where = "cycle %d (seed %d)" % (cycle, self.seed)
        c = s.claim("crash/fresh", [("m", m) for m in MUTEXES] + [("s", POOL, 2)])
        self.assertEqual(c["state"], "held", where)
        for lk in c["locks"]:
            key = lock_key(lk["kind"], lk["name"])
            self.assertGreater(lk["token"], L.max_token[key], "%s: new token on %s"
                               % (where, key))
        L.saw_claim(c)
        fin = s.release(c["id"])
        L.ended[c["id"]] = fin["state"]
        new = s.all_events(log_len)
        self.assertEqual(new[0]["seq"], log_len + 1, where)
        self.assertEqual((new[0]["type"], new[0]["claim"]), ("claim.queued", c["id"]), where)
        with L.mu:
            for e in new:
                L.events[e["seq"]] = (e["type"], e["claim"])
        return new[-1]["seq"]

    # ---- the test ---------------------------------------------------------

    def test_kill9_cycles(self):
        """Random kill -9 during claim/release traffic, restart, check, repeat."""
        s, L = self.srv, self.ledger
        try:
            s.sem_put(POOL, 2)
            hold, order = self.make_queue()
            log_len = len(s.all_events(0))
            t_end = time.monotonic() + self.budget_s
            stats = collections.Counter()
            done = 0
            for cycle in range(1, self.cycles + 1):
                if time.monotonic() > t_end - 5:
                    print("test_crash: time budget reached after %d cycles" % (cycle - 1))
                    break
                stop = threading.Event()
                threads = [Client(s.port, L, t, random.Random(self.rng.random()), stop)
                           for t in range(THREADS)]
                threads.append(EventReader(s.port, L, log_len, stop))
                for t in threads:
                    t.start()
                time.sleep(self.rng.uniform(0.2, 1.2))  # the random moment of the crash
                s.kill9()
                stop.set()
                for t in threads:
                    t.join(30)
                    self.assertFalse(t.is_alive(), "a client thread hung")
                stats["held at crash"] += len(L.held)
                stats["in flight"] += len(L.in_flight) + len(L.unsure)
                stats["ended"] = len(L.ended)
                s.start()
                if TORN_LINE in s.stderr():  # a kill mid-append: cut, never loaded
                    stats["torn tails cut"] += 1
                log_len = self.check_after_restart(cycle, hold, order, log_len)
                self.clean_up(cycle)
                log_len = self.fresh_grants(cycle, len(s.all_events(0)))
                done = cycle
            print("test_crash: %d cycles, %s, %d events, max tokens %s"
                  % (done, dict(stats), log_len, dict(L.max_token)))
            self.assertGreater(stats["ended"], 0, "no traffic happened")
        except BaseException:
            s.dump_stderr("(seed %d)" % self.seed)
            raise


@unittest.skipIf(fx.store_kind() != "sqlite",
                 "--durability full takes a path of its own with SQLite only")
class TestCrashFull(TestCrash):
    """The same rounds with every commit synced before it is answered."""
    DURABILITY = "full"
    CYCLES = 8


@unittest.skipIf(fx.store_kind() != "sqlite", "the log file is SQLite's (docs/store.md)")
class TestTornTail(unittest.TestCase):
    """What a restart does with the end of the log file (PATH-log/)."""

    def setUp(self):
        self.srv = None

    def tearDown(self):
        if self.srv:
            self.srv.stop()

    def newest_segment(self):
        log = self.srv.store + "-log"
        return os.path.join(log, max(n for n in os.listdir(log) if n.endswith(".seg")))

    def test_torn_write_cut_and_logged(self):
        """Bytes after the last whole frame (a write a crash cut short) are cut
        off at the start, the log says how many, and what was answered holds."""
        s = self.srv = Sluiced()
        c = s.claim("torn/a", [("m", "torn/m")])
        s.terminate()
        with open(self.newest_segment(), "ab") as f:
            f.write(b"\x2a\x00\x00\x00torn write")  # 14 bytes: a length, half a frame
        s.start()
        self.assertIn("the 14 bytes after its last whole record were cut off", s.stderr())
        self.assertEqual(s.claim_get(c["id"])["state"], "held")
        d = s.claim("torn/b", [("m", "torn/m2")])
        seqs = [e["seq"] for e in s.all_events(0)]
        self.assertEqual(seqs, list(range(1, len(seqs) + 1)))
        s.restart(hard=True)
        self.assertNotIn(TORN_LINE, s.stderr())
        self.assertEqual(s.claim_get(d["id"])["state"], "held")

    def test_full_segment_zeros_are_no_torn_tail(self):
        """--durability full fills the segment with zeros ahead of the appends;
        a kill -9 leaves them, and the restart cuts them without calling
        them a torn write."""
        s = self.srv = Sluiced(durability="full")
        c = s.claim("torn/a", [("m", "torn/m")])
        s.kill9()
        seg = self.newest_segment()
        with open(seg, "rb") as f:
            self.assertTrue(f.read().endswith(b"\0" * 4096), "no zeros ahead in %s" % seg)
        s.start()
        self.assertNotIn(TORN_LINE, s.stderr())
        self.assertEqual(s.claim_get(c["id"])["state"], "held")


if __name__ == "__main__":
    fx.main()
