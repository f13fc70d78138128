"""Tests of the sluice Python client against a real sluiced.

The server binary comes from $SLUICED (CTest sets it); each test class starts one on a free
loopback port with an SQLite store in a temporary directory, waits for GET /healthz, and
stops it with SIGTERM, requiring exit status 0.

Run: SLUICED=build/release/src/server/sluiced PYTHONPATH=clients/python \
     python3 -m unittest discover -s clients/python/tests -v
"""
from __future__ import annotations

import http.server
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import threading
import time
import unittest
import urllib.error
import urllib.request
from typing import Any, Dict, List, Optional, Sequence

import sluice

READY_DEADLINE_S = 10.0
STOP_DEADLINE_S = 30.0


def free_port() -> int:
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
    finally:
        s.close()


class Server:
    """One sluiced on a free loopback port with an SQLite store in a temporary directory;
    ``args`` are more flags (TLS: ``context`` then says how to reach it for /healthz)."""

    def __init__(self, args: Sequence[str] = (), context: Optional[ssl.SSLContext] = None) -> None:
        binary = os.environ.get("SLUICED")
        if not binary or not os.path.isfile(binary):
            raise unittest.SkipTest("set SLUICED to the sluiced binary")
        self.binary = binary
        self.dir = tempfile.mkdtemp(prefix="sluice-py-")
        self.port = free_port()
        self.args = list(args)
        self.context = context
        self.url = f"{'https' if context else 'http'}://127.0.0.1:{self.port}"
        self.proc: Optional[subprocess.Popen[bytes]] = None
        self.log = os.path.join(self.dir, "sluiced.log")

    def start(self) -> None:
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(
                [self.binary, "--listen", f"127.0.0.1:{self.port}",
                 "--store", f"sqlite:{os.path.join(self.dir, 'sluice.db')}", "--log-level", "warn",
                 *self.args],
                stdout=log, stderr=log)
        deadline = time.monotonic() + READY_DEADLINE_S
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"sluiced exited with {self.proc.returncode}: {self.output()}")
            try:
                with urllib.request.urlopen(self.url + "/healthz", timeout=1.0,
                                            context=self.context) as r:
                    if r.status == 200:
                        return
            except (OSError, urllib.error.URLError):
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"sluiced did not answer /healthz in {READY_DEADLINE_S} s")
            time.sleep(0.02)

    def stop(self) -> int:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(timeout=STOP_DEADLINE_S)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            rc = -9
        self.proc = None
        return rc

    def output(self) -> str:
        try:
            with open(self.log, encoding="utf-8", errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def cleanup(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


def raw(url: str, method: str, path: str, body: Any = None,
        headers: Optional[Dict[str, str]] = None) -> Any:
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url + path, data=data, method=method, headers=headers or {})
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.loads(r.read().decode())


def wait_until(cond: Any, deadline_s: float = 10.0, what: str = "condition") -> None:
    deadline = time.monotonic() + deadline_s
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} not reached in {deadline_s} s")
        time.sleep(0.01)


class ServerCase(unittest.TestCase):
    """One sluiced for the whole class (make_server: which), stopped with SIGTERM at the
    class's end, exit status 0 required. test_tls.py's classes are these too."""

    server: Server

    @classmethod
    def make_server(cls) -> Server:
        return Server()

    @classmethod
    def setUpClass(cls) -> None:
        cls.server = cls.make_server()
        try:
            cls.server.start()
        except BaseException:
            cls.server.cleanup()
            raise

    @classmethod
    def tearDownClass(cls) -> None:
        try:
            rc = cls.server.stop()
            if rc != 0:
                raise AssertionError(f"sluiced exited {rc}: {cls.server.output()}")
        finally:
            cls.server.cleanup()


class ClientTest(ServerCase):
    def setUp(self) -> None:
        self.client = sluice.Client(self.server.url, timeout=10.0)

    def live_claims(self, mutex: str) -> List[sluice.Claim]:
        return [c for c in self.client.claims(lock=f"mtx/{mutex}") if c.live]

    # -------------------------------------------------------------- basics

    def test_acquire_release(self) -> None:
        c = self.client.acquire(mutex="basic", holder="run-1/build", lease="5s")
        self.assertEqual(c.state, "held")
        self.assertEqual(c.holder, "run-1/build")
        self.assertEqual(len(c.id), 22)
        self.assertIsNotNone(c.token)
        self.assertEqual(c.tokens, {"basic": c.token})
        self.assertEqual(c.lease, 5.0)
        got = self.client.get(c.id)
        self.assertEqual(got.id, c.id)
        self.assertEqual(self.client.why(c)["state"], "held")
        self.client.release(c)
        self.assertEqual(c.state, "released")
        self.assertEqual(self.client.status()["role"], "leader")

    def test_release_prefix(self) -> None:
        a = self.client.acquire(mutex="py-rp-m", holder="py-run-7/a")
        b = self.client.acquire(mutex="py-rp-m", holder="py-run-7/b")
        # "py-run-7" alone would match it too: the prefix is plain, hence the '/'.
        x = self.client.acquire(mutex="py-rp-x", holder="py-run-70/x")
        self.assertEqual((a.state, b.state, x.state), ("held", "pending", "held"))
        self.assertEqual(self.client.release_prefix("py-run-7/"),
                         {"released": 1, "withdrawn": 1, "canceled": 0, "skipped": 0})
        self.assertEqual(self.client.get(a).state, "released")
        self.assertEqual(self.client.get(b).state, "withdrawn")
        self.assertEqual(self.client.get(x).state, "held")
        self.assertEqual(self.client.release_prefix("py-run-7/"),
                         {"released": 0, "withdrawn": 0, "canceled": 0, "skipped": 0})
        # What a query must escape: '&', '=', '+', '%', '#', '?', a blank.
        odd = "py-run-8/a b&c=d+e%f#g?"
        o = self.client.acquire(mutex="py-rp-odd", holder=odd + "h")
        self.assertEqual(self.client.release_prefix(odd),
                         {"released": 1, "withdrawn": 0, "canceled": 0, "skipped": 0})
        self.assertEqual(self.client.get(o).state, "released")
        with self.assertRaises(ValueError):
            self.client.release_prefix("")
        with self.assertRaises(sluice.BadRequest) as cm:
            self.client.release_prefix("p" * 254)
        self.assertEqual((cm.exception.status, cm.exception.code), (400, "bad_request"))
        self.assertEqual(self.client.get(x).state, "held")
        self.client.release(x)

    def test_inline_limit(self) -> None:
        # Nothing configures py-il/steps: the first claim makes it with limit 2.
        a = self.client.acquire(semaphores={"py-il/steps": (1, 2)}, holder="py-il/a")
        b = self.client.acquire(semaphores={"py-il/steps": {"slots": 1, "limit": 2}},
                                holder="py-il/b")
        c = self.client.acquire(semaphores={"py-il/steps": {"limit": 2}}, holder="py-il/c")
        self.assertEqual((a.state, b.state, c.state), ("held", "held", "pending"))
        self.assertEqual(a.locks[0]["limit"], 2)
        self.assertEqual(c.locks[0]["position"], 1)
        with self.assertRaises(sluice.Conflict) as cm:
            self.client.acquire(semaphores={"py-il/steps": (1, 3)}, holder="py-il/d")
        self.assertIn("3", cm.exception.message)
        with self.assertRaises(ValueError):
            self.client.acquire(semaphores={"py-il/steps": {"limits": 2}})
        for claim in (c, b, a):
            self.client.release(claim)
        # Gone with its last claim.
        with self.assertRaises(sluice.NotFound):
            self.client._request("GET", "/v1/semaphores/py-il/steps")

    def test_groups(self) -> None:
        self.client.set_semaphore("group/py-repo-*", 5)
        old = self.client.acquire(groups=["py-pr-12", "py-repo-x"], holder="py-g/old")
        self.assertEqual(old.state, "held")
        self.assertEqual(old.groups, [{"name": "py-pr-12", "cancel": "none"},
                                      {"name": "py-repo-x", "cancel": "none"}])
        new = self.client.acquire(groups=[{"name": "py-pr-12", "cancel": "in-progress"},
                                          ("py-repo-x", None)],
                                  grace=0, holder="py-g/new")
        self.assertEqual(new.state, "held")
        self.assertEqual(new.groups[0], {"name": "py-pr-12", "cancel": "in-progress"})
        self.assertEqual(new.raw["group"], "py-pr-12")
        old = self.client.get(old)
        self.assertEqual(old.state, "canceled")
        self.assertIn(new.id, old.reason)
        # The shorthand and the list together.
        both = self.client.acquire(group="py-pr-13", cancel="pending",
                                   groups=[("py-repo-x", "none")], holder="py-g/both")
        self.assertEqual([g["name"] for g in both.groups], ["py-pr-13", "py-repo-x"])
        self.assertEqual(self.client.get(new).state, "held")
        self.client.release(both)
        self.client.release(new)

    def test_queue_clear(self) -> None:
        held = self.client.acquire(mutex="py-qc-m", holder="py-qc/held")
        waiters = [self.client.acquire(mutex="py-qc-m", holder=f"py-qc/w{i}") for i in range(3)]
        other = self.client.acquire(mutex="py-qc-o", holder="py-qc/o")
        other_w = self.client.acquire(mutex="py-qc-o", holder="py-qcx/o")
        self.assertEqual(self.client.queue_clear(lock="mtx/py-qc-m"), 3)
        for w in waiters:
            w = self.client.get(w)
            self.assertEqual((w.state, w.reason), ("canceled", "canceled by an operator"))
        self.assertEqual(self.client.get(held).state, "held")
        # Both: only the waiters of the lock whose holder has the prefix.
        self.assertEqual(self.client.queue_clear(lock="mtx/py-qc-o", holder_prefix="py-qc/"), 0)
        self.assertEqual(self.client.queue_clear(holder_prefix="py-qcx/"), 1)
        self.assertEqual(self.client.get(other_w).state, "canceled")
        self.assertEqual(self.client.queue_clear(lock="sem/py-qc-none"), 0)
        with self.assertRaises(ValueError):
            self.client.queue_clear()
        with self.assertRaises(ValueError):
            self.client.queue_clear(lock="")
        with self.assertRaises(sluice.BadRequest):
            self.client.queue_clear(lock="py-qc-m")
        self.client.release(held)
        self.client.release(other)

    def test_default_holder(self) -> None:
        c = self.client.acquire(mutex="holder-default")
        self.assertEqual(c.holder, f"{socket.gethostname()}/{os.getpid()}")
        self.client.release(c)

    def test_durations(self) -> None:
        self.assertEqual(sluice.parse_duration("1h30m"), 5400.0)
        self.assertEqual(sluice.parse_duration("250ms"), 0.25)
        self.assertEqual(sluice.parse_duration(2), 2.0)
        self.assertEqual(sluice.parse_duration("1.5s"), 1.5)
        with self.assertRaises(ValueError):
            sluice.parse_duration("1d")

    def test_servers_from_env_and_lists(self) -> None:
        old = os.environ.get("SLUICE_SERVER")
        os.environ["SLUICE_SERVER"] = " a:1 , http://b:2/ "
        try:
            self.assertEqual(sluice.Client().servers, ["http://a:1", "http://b:2"])
        finally:
            if old is None:
                del os.environ["SLUICE_SERVER"]
            else:
                os.environ["SLUICE_SERVER"] = old
        self.assertEqual(sluice.Client(["x:1", "y:2"]).servers, ["http://x:1", "http://y:2"])
        with self.assertRaises(ValueError):
            sluice.Client("a:1,,b:2")

    # -------------------------------------------------------------- exclusion

    def test_mutual_exclusion(self) -> None:
        order: List[str] = []
        tokens: List[int] = []
        first_in = threading.Event()
        release_first = threading.Event()

        def first() -> None:
            with self.client.hold(mutex="excl", lease="5s") as c:
                tokens.append(c.token or 0)
                order.append("first in")
                first_in.set()
                release_first.wait(10)
                order.append("first out")

        t = threading.Thread(target=first)
        t.start()
        self.assertTrue(first_in.wait(10))
        second_done = threading.Event()

        def second() -> None:
            with self.client.hold(mutex="excl", lease="5s") as c:
                order.append("second in")
                tokens.append(c.token or 0)
            second_done.set()

        t2 = threading.Thread(target=second)
        t2.start()
        try:
            wait_until(lambda: any(c.state == "pending" for c in self.live_claims("excl")),
                       what="second claim pending")
            self.assertFalse(second_done.is_set())
        finally:
            release_first.set()
        t.join(10)
        t2.join(10)
        self.assertEqual(order, ["first in", "first out", "second in"])
        self.assertEqual(len(tokens), 2)
        self.assertGreater(tokens[1], tokens[0])

    def test_semaphore_slots(self) -> None:
        self.client.set_semaphore("pool", 3)
        a = self.client.acquire(semaphores={"pool": 2})
        b = self.client.acquire(semaphores={"pool": 1})
        c = self.client.acquire(semaphores=["pool"])
        self.assertEqual((a.state, b.state, c.state), ("held", "held", "pending"))
        ids = {a.id, b.id, c.id}
        self.assertEqual([q["id"] for q in self.client.queue() if q["id"] in ids], [c.id])
        self.client.release(b)
        self.client.wait_held(c, timeout=5)
        self.assertEqual(c.state, "held")
        with self.assertRaises(sluice.BadRequest):
            self.client.acquire(semaphores={"pool": 4})
        for x in (a, c):
            self.client.release(x)

    def test_semaphore_rules(self) -> None:
        s = self.client.set_semaphore("py-rules", 2, preempt=True, preempt_grace="2s",
                                      max_pending=3, on_full="drop_oldest", rate="30/m",
                                      burst=1, backdate=60, lease="1m")
        self.assertIsInstance(s, sluice.Semaphore)
        self.assertIsInstance(s, dict)  # what set_semaphore always answered
        self.assertEqual((s.name, s.limit, s.strategy, s.inline), ("py-rules", 2, "strict", False))
        self.assertEqual((s.preempt, s.preempt_grace, s.max_pending, s.on_full),
                         (True, 2.0, 3, "drop_oldest"))
        self.assertEqual((s.rate, s.burst, s.backdate), ("30/1m", 1, 60.0))
        self.assertEqual((s.weights, s.default_weight, s.overtake_limit), ({}, None, None))
        got = self.client.semaphore("py-rules")
        self.assertEqual(got, s)
        self.assertEqual((got.preempt, got.max_pending, got["burst"]), (True, 3, 1))
        w = self.client.set_semaphore("py-rules-w", 8, "rebalanced", weights={"acme": 3},
                                      default_weight=2)
        self.assertEqual((w.weights, w.default_weight, w.preempt, w.rate, w.max_pending),
                         ({"acme": 3}, 2, False, None, None))
        k = self.client.set_semaphore("py-rules-k", 1, "skip", overtake_limit="30s")
        self.assertEqual(k.overtake_limit, 30.0)
        # a PUT replaces the whole configuration: the rules not given are off
        off = self.client.set_semaphore("py-rules", 2)
        self.assertEqual((off.preempt, off.preempt_grace, off.max_pending, off.rate, off.backdate),
                         (False, None, None, None, 0.0))
        # the server's checks, with its messages
        cases: List[Any] = [({"preempt_grace": "2s"}, "preempt_grace applies only"),
                           ({"burst": 2}, "burst applies only with a rate"),
                           ({"weights": {"a": 1}}, "rebalanced strategy only"),
                           ({"on_full": "drop_oldest"}, "on_full applies only"),
                           ({"rate": "5/0s"}, "that is 0: a period is a positive duration")]
        for kwargs, words in cases:
            with self.assertRaises(sluice.BadRequest) as cm:
                self.client.set_semaphore("py-rules-bad", 1, **kwargs)
            self.assertIn(words, cm.exception.message)
        # the why answer's rules, as the API gives them
        self.client.set_semaphore("py-rules-p", 1, preempt=True, preempt_grace="1m")
        low = self.client.acquire(semaphores=["py-rules-p"])
        high = self.client.acquire(semaphores=["py-rules-p"], priority=10)
        self.assertEqual(high.state, "pending")
        why = self.client.why(high)
        self.assertEqual(why["reasons"][0]["preempt"], {"status": "waiting", "holders": 1,
                                                       "preempted": 1})
        self.assertIsNone(why["reasons"][0]["share"])
        self.client.release(low)
        self.client.wait_held(high, timeout=5)
        self.client.release(high)

    # -------------------------------------------------------------- leases

    def test_lease_renewal(self) -> None:
        with self.client.hold(mutex="lease", lease="1s") as c:
            time.sleep(3.0)
            self.assertFalse(c.lost.is_set())
            self.assertEqual(self.client.get(c.id).state, "held")
        self.assertEqual(self.client.get(c.id).state, "released")

    def test_loss_detection(self) -> None:
        called: List[sluice.Claim] = []
        with self.client.hold(mutex="loss", lease="1s", on_lost=called.append) as c:
            raw(self.server.url, "POST", f"/v1/claims/{c.id}/cancel")
            self.assertTrue(c.lost.wait(5), "lost not set after cancel")
        self.assertEqual(len(called), 1)
        self.assertIs(called[0], c)
        self.assertEqual(self.client.get(c.id).state, "canceled")

    def test_loss_detection_long_lease(self) -> None:
        # With a 30 s lease the keeper's long poll sees the cancel at once.
        with self.client.hold(mutex="loss-long", lease="30s") as c:
            start = time.monotonic()
            self.client.cancel(c.id)
            self.assertTrue(c.lost.wait(5))
            self.assertLess(time.monotonic() - start, 3.0)

    def test_timeout(self) -> None:
        blocker = self.client.acquire(mutex="busy")
        start = time.monotonic()
        with self.assertRaises(sluice.Timeout):
            with self.client.hold(mutex="busy", timeout=0.5):
                self.fail("held a busy mutex")
        self.assertLess(time.monotonic() - start, 5.0)
        self.assertEqual([c.id for c in self.live_claims("busy")], [blocker.id])
        self.client.release(blocker)
        self.assertEqual(self.live_claims("busy"), [])

    def test_acquire_has_a_lease_by_default(self) -> None:
        """E10: a claim whose script dies ends by itself, as the sluice command's."""
        c = self.client.acquire(mutex="default-lease")
        self.assertEqual(c.lease, 30.0)
        none = self.client.acquire(mutex="no-lease", lease=0)
        self.assertEqual(none.lease, 0.0)
        self.client.release(c)
        self.client.release(none)

    def test_wait_held_timeout_withdraws(self) -> None:
        """E10: a Timeout of wait_held leaves nothing waiting, unless asked to."""
        blocker = self.client.acquire(mutex="wh-busy")
        c = self.client.acquire(mutex="wh-busy")
        self.assertEqual(c.state, "pending")
        with self.assertRaises(TimeoutError) as cm:  # a sluice.Timeout is a TimeoutError
            self.client.wait_held(c, timeout=0.3)
        e = cm.exception
        assert isinstance(e, sluice.Timeout)
        self.assertIsNone(e.status)
        self.assertIs(e.claim, c)
        self.assertIn("withdrawn", e.message)
        self.assertEqual(self.client.get(c.id).state, "withdrawn")
        kept = self.client.acquire(mutex="wh-busy")
        with self.assertRaises(sluice.Timeout) as cm2:
            self.client.wait_held(kept, timeout=0.3, withdraw=False)
        self.assertIn("left pending", cm2.exception.message)
        self.assertEqual(self.client.get(kept.id).state, "pending")
        self.client.release(kept)
        self.client.release(blocker)
        self.assertEqual(self.live_claims("wh-busy"), [])

    def test_close_and_context_manager(self) -> None:
        """E15: closing releases the holds still open; a closed client says so."""
        with sluice.Client(self.server.url, timeout=10.0) as client:
            hold = client.hold(mutex="closing", lease="10s")
            claim = hold.__enter__()
            self.assertEqual(claim.state, "held")
        self.assertEqual(self.client.get(claim.id).state, "released")
        hold.__exit__(None, None, None)  # the block ends after the close: no error
        with self.assertRaises(sluice.SluiceError) as cm:
            client.status()
        self.assertEqual((cm.exception.status, cm.exception.code), (None, "closed"))
        client.close()  # again: nothing

    def test_unknown_semaphore_says_the_python_way(self) -> None:
        """E15: the 422 names set_semaphore, the Python way to configure one."""
        with self.assertRaises(sluice.BadRequest) as cm:
            self.client.acquire(semaphores={"never-configured": 1})
        self.assertEqual((cm.exception.status, cm.exception.code), (422, "unknown_semaphore"))
        self.assertIn("client.set_semaphore(NAME, LIMIT)", cm.exception.message)

    def test_decorator(self) -> None:
        @self.client.holding(mutex="decorated", lease="2s")
        def job(x: int) -> int:
            held = [c for c in self.live_claims("decorated") if c.state == "held"]
            return x + len(held)

        self.assertEqual(job(1), 2)
        self.assertEqual(self.live_claims("decorated"), [])

    # -------------------------------------------------------------- idempotency, errors

    def test_idempotency(self) -> None:
        a = self.client.acquire(mutex="idem", idempotency_key="key-1")
        b = self.client.acquire(mutex="idem", idempotency_key="key-1")
        self.assertEqual(a.id, b.id)
        self.assertFalse(a.replayed)
        self.assertTrue(b.replayed)
        self.assertEqual(len(self.live_claims("idem")), 1)
        with self.assertRaises(sluice.Conflict):
            self.client.acquire(mutex="other", idempotency_key="key-1")
        self.client.release(a)

    def test_errors(self) -> None:
        with self.assertRaises(sluice.BadRequest) as cm:
            self.client.acquire(mutex="x", lease="1d")
        e = cm.exception
        self.assertIsInstance(e, sluice.SluiceError)
        self.assertEqual((e.status, e.code), (400, "bad_request"))
        self.assertIn("day unit", e.message)
        with self.assertRaises(sluice.BadRequest) as cm:
            self.client.acquire(mutex="a//b")
        self.assertIn("locks[0]", cm.exception.message)
        with self.assertRaises(sluice.NotFound) as nf:
            self.client.get("AAAAAAAAAAAAAAAAAAAAAA")
        self.assertEqual(nf.exception.status, 404)
        c = self.client.acquire(mutex="err")
        self.client.release(c)
        with self.assertRaises(sluice.Conflict):
            self.client.renew(c)

    # -------------------------------------------------------------- failover

    def test_retry_same_key(self) -> None:
        """A creation whose answer was lost is sent again with the same key: one claim."""
        proxy = DropAfterForward(self.server.url)
        try:
            client = sluice.Client([proxy.url, self.server.url], timeout=5.0)
            c = client.acquire(mutex="retried")
            self.assertTrue(c.replayed)
            self.assertEqual(len(proxy.keys), 1)
            self.assertEqual([x.id for x in self.live_claims("retried")], [c.id])
            client.release(c)
        finally:
            proxy.close()

    def test_failover_past_an_unverified_leader(self) -> None:
        """503 leader_unverified: that server cannot prove its leader; another may."""
        follower = Unverified()
        try:
            client = sluice.Client([follower.url, self.server.url], timeout=5.0)
            c = client.acquire(mutex="unverified")
            self.assertEqual(c.state, "held")
            self.assertEqual(follower.hits, 1)
            self.assertEqual(client.server, self.server.url)
            client.release(c)
        finally:
            follower.close()

    def test_failover_dead_first(self) -> None:
        dead = f"http://127.0.0.1:{free_port()}"
        client = sluice.Client([dead, self.server.url], timeout=5.0)
        start = time.monotonic()
        c = client.acquire(mutex="failover")
        self.assertLess(time.monotonic() - start, 3.0)
        self.assertEqual(c.state, "held")
        self.assertEqual(client.server, self.server.url)  # sticky
        self.assertEqual(client.get(c).state, "held")
        client.release(c)
        only_dead = sluice.Client(dead, retry_for=0.3)
        with self.assertRaises(sluice.Unavailable) as cm:
            only_dead.status()
        self.assertIsNone(cm.exception.status)  # no server answered: no HTTP status


class Unverified:
    """A follower that cannot prove its leader: every request gets 503
    leader_unverified (F10)."""

    def __init__(self) -> None:
        body = json.dumps({"error": {"code": "leader_unverified",
                                     "message": "cannot prove the leader"}}).encode()
        self.hits = 0
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def answer(self) -> None:
                outer.hits += 1
                length = int(self.headers.get("Content-Length", "0"))
                self.rfile.read(length)
                self.send_response(503)
                self.send_header("Content-Type", "application/json")
                self.send_header("Retry-After", "0")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = do_DELETE = answer

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


class DropAfterForward:
    """A server that passes each request to the real one and hangs up without answering:
    the creation got through, its answer was lost."""

    def __init__(self, target: str) -> None:
        self.target = target
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(4)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.keys: List[str] = []
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                data = b""
                while b"\r\n\r\n" not in data:
                    chunk = conn.recv(65536)
                    if not chunk:
                        break
                    data += chunk
                head, _, body = data.partition(b"\r\n\r\n")
                lines = head.decode().split("\r\n")
                method, path, _ = lines[0].split(" ", 2)
                headers = dict(l.split(": ", 1) for l in lines[1:] if ": " in l)
                length = int(headers.get("Content-Length", "0"))
                while len(body) < length:
                    body += conn.recv(65536)
                self.keys.append(headers.get("Idempotency-Key", ""))
                req = urllib.request.Request(self.target + path, data=body or None,
                                             method=method, headers=headers)
                with urllib.request.urlopen(req, timeout=10) as r:
                    r.read()

    def close(self) -> None:
        self.sock.close()


class UnreachableTest(unittest.TestCase):
    """E9: a hold whose server is stopped (its own server, as it is stopped)."""

    def setUp(self) -> None:
        self.server = Server()
        self.server.start()
        self.addCleanup(self.server.cleanup)

    def test_lost_by_unreachability_is_not_held(self) -> None:
        client = sluice.Client(self.server.url, timeout=2.0)
        called: List[sluice.Claim] = []
        with client.hold(mutex="unreachable", lease="2s", on_lost=called.append) as claim:
            self.assertTrue(claim.held)
            self.assertEqual(self.server.stop(), 0, self.server.output())
            self.assertTrue(claim.lost.wait(15), "lost not set with the server stopped")
            self.assertEqual(called, [claim])
            self.assertEqual(claim.state, "unknown")
            self.assertFalse(claim.held)
            self.assertFalse(claim.live)
            self.assertIn("the server was unreachable for longer than the lease (2 s)",
                          claim.reason)
            start = time.monotonic()
        self.assertLess(time.monotonic() - start, 5.0, "the release on exit waited too long")


class EventsTest(unittest.TestCase):
    """follow_events across a server restart (its own server, as it is stopped)."""

    def setUp(self) -> None:
        self.server = Server()
        self.server.start()

    def tearDown(self) -> None:
        try:
            if self.server.proc is not None:
                self.assertEqual(self.server.stop(), 0, self.server.output())
        finally:
            self.server.cleanup()

    def test_follow_events_resumes(self) -> None:
        client = sluice.Client(self.server.url, timeout=5.0)
        page = client.events(since=0)
        start = page["next"]
        got: List[Dict[str, Any]] = []
        done = threading.Event()
        errors: List[BaseException] = []

        def reader() -> None:
            try:
                for ev in client.follow_events(since=start):
                    got.append(ev)
                    if ev.get("type") == "claim.released" and ev.get("holder") == "after":
                        done.set()
                        return
            except BaseException as e:  # reported by the test
                errors.append(e)
                done.set()

        t = threading.Thread(target=reader, daemon=True)
        t.start()
        a = client.acquire(mutex="ev", holder="before")
        client.release(a)
        wait_until(lambda: any(e.get("type") == "claim.released" for e in got), what="first events")
        self.assertEqual(self.server.stop(), 0, self.server.output())
        self.server.start()  # same port, same store
        b = client.acquire(mutex="ev", holder="after")
        client.release(b)
        self.assertTrue(done.wait(20), f"events seen: {got}")
        self.assertEqual(errors, [])
        seqs = [e["seq"] for e in got]
        self.assertEqual(seqs, sorted(set(seqs)), "an event missed or repeated")
        self.assertEqual(seqs, list(range(start + 1, start + 1 + len(seqs))))
        self.assertEqual(client.events(since=start)["events"][0]["seq"], start + 1)


if __name__ == "__main__":
    unittest.main(verbosity=2)
