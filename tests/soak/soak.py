#!/usr/bin/env python3
"""soak.py - sluiced under an hour of mixed load, its memory and descriptors watched.

Run by hand (an hour is too long for CI; CTest runs it for 20 s as
soak/short so that the script itself keeps working):

    python3 tests/soak/soak.py --minutes 60 [--sluiced build/release/src/server/sluiced]

One sluiced on a fresh SQLite store, and at once:
  - workers that claim (with wait, a lease, tags, a group now and then),
    hold a moment, renew, and release;
  - clients that die: they claim with a 1 s lease and vanish without a word,
    or hang up in the middle of a long poll, so leases expire and creators
    go missing;
  - groups with cancel-in-progress, revoking their older runs;
  - an operator that changes limits and strategies every couple of seconds;
  - event readers that page through the log and open streams that drop.
Every 10 s the server's resident memory (VmRSS) and open descriptors are
sampled from /proc. At the end the samples are printed, and the run fails
if the server died, if descriptors were not back at their idle count, or,
for a run of 10 minutes or more, if memory kept growing in the second half
of the run (the last quarter's median more than 20 % above the second
quarter's): flat is the promise. A shorter run cannot judge memory (ended
claims are kept 2 minutes before memory reaches its steady state, and
AddressSanitizer's quarantine grows for a while too) and only reports it.
"""
import argparse
import http.client
import json
import os
import random
import socket
import statistics
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "server"))
import sluiced_fixture as fx  # noqa: E402

CONFIG = """
limits:
  claim_retention: 2m
  event_retention: 5m
semaphores:
  - name: soak/pool
    limit: 8
    lease: 5s
  - name: soak/runs
    limit: 6
    strategy: skip
    overtake_limit: 2s
  - name: "tag/tenant=*"
    limit: 3
  - name: soak/fair
    limit: 5
    strategy: rebalanced
"""

TENANTS = ["acme", "globex", "initech", "umbrella"]
ERRORS = (OSError, http.client.HTTPException, ValueError)


class Load:
    """Shared counters and the stop flag."""

    def __init__(self, port, deadline):
        self.port = port
        self.deadline = deadline
        self.stop = threading.Event()
        self.mu = threading.Lock()
        self.counts = {}

    def count(self, what, n=1):
        with self.mu:
            self.counts[what] = self.counts.get(what, 0) + n

    def running(self):
        return not self.stop.is_set() and time.monotonic() < self.deadline

    def request(self, method, path, body=None, timeout=40):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            data = json.dumps(body).encode() if body is not None else None
            conn.request(method, path, body=data,
                         headers={"Content-Type": "application/json"} if data else {})
            r = conn.getresponse()
            payload = r.read()
            return r.status, (json.loads(payload) if payload else None)
        finally:
            conn.close()


def claim_body(rng, holder):
    locks = []
    kind = rng.random()
    if kind < 0.3:
        locks.append({"semaphore": "soak/pool", "slots": rng.choice([1, 1, 2])})
    elif kind < 0.55:
        locks.append({"semaphore": "soak/runs", "slots": rng.choice([1, 1, 1, 3])})
    elif kind < 0.75:
        locks.append({"mutex": "soak/m%d" % rng.randrange(20)})
    else:
        locks.append({"semaphore": "soak/fair"})
    body = {"holder": holder, "locks": locks, "lease": "3s", "wait": "2s",
            "timeout": "20s"}
    if rng.random() < 0.4:
        body["tags"] = {"tenant": rng.choice(TENANTS)}
    if locks[0].get("semaphore") == "soak/fair":
        body["rebalance_key"] = rng.choice(TENANTS)
    return body


def worker(load, wid):
    """Claims, waits, holds, renews, releases."""
    rng = random.Random(wid)
    while load.running():
        try:
            st, c = load.request("POST", "/v1/claims", claim_body(rng, "soak/w%d" % wid))
            if st != 201:
                load.count("refused %d" % st)
                continue
            cid = c["id"]
            while c["state"] == "pending" and load.running():
                st, c = load.request("GET", "/v1/claims/%s?wait=2s&seen=pending" % cid)
            if c["state"] == "held":
                load.count("held")
                time.sleep(rng.uniform(0, 0.3))
                if rng.random() < 0.3:
                    load.request("POST", "/v1/claims/%s/renew" % cid)
                    load.count("renewed")
            load.request("DELETE", "/v1/claims/%s" % cid)
        except ERRORS:
            load.count("errors")
            time.sleep(0.1)


def dying_client(load, wid):
    """Claims and vanishes: a lease runs out, or a long poll is cut."""
    rng = random.Random(1000 + wid)
    while load.running():
        try:
            if rng.random() < 0.5:
                body = {"holder": "soak/dying%d" % wid, "lease": "1s",
                        "locks": [{"mutex": "soak/m%d" % rng.randrange(20)}]}
                load.request("POST", "/v1/claims", body)
                load.count("abandoned")
            else:
                body = {"holder": "soak/gone%d" % wid, "wait": "10s", "lease": "5s",
                        "locks": [{"semaphore": "soak/runs", "slots": 1}]}
                s = socket.create_connection(("127.0.0.1", load.port), timeout=10)
                data = json.dumps(body).encode()
                s.sendall(b"POST /v1/claims HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: %d\r\n\r\n"
                          % len(data) + data)
                time.sleep(rng.uniform(0, 0.5))
                s.close()
                load.count("hung up")
            time.sleep(rng.uniform(0.05, 0.3))
        except ERRORS:
            load.count("errors")
            time.sleep(0.1)


def group_runner(load, wid):
    """A pull request's runs: each new one cancels the one in progress."""
    rng = random.Random(2000 + wid)
    while load.running():
        try:
            body = {"holder": "soak/pr%d" % wid, "group": "soak/pr-%d" % rng.randrange(5),
                    "cancel": "in-progress", "grace": "300ms", "lease": "2s", "wait": "1s"}
            st, c = load.request("POST", "/v1/claims", body)
            if st == 201:
                load.count("group runs")
                time.sleep(rng.uniform(0, 0.5))
                load.request("DELETE", "/v1/claims/%s" % c["id"])
        except ERRORS:
            load.count("errors")
            time.sleep(0.1)


def operator(load):
    """Changes limits and strategies now and then."""
    rng = random.Random(3000)
    while load.running():
        try:
            load.request("PUT", "/v1/semaphores/soak/pool",
                         {"limit": rng.randrange(2, 12), "lease": "5s"})
            load.request("PUT", "/v1/semaphores/soak/fair",
                         {"limit": rng.randrange(1, 8), "strategy": rng.choice(
                             ["rebalanced", "strict", "skip"])})
            load.count("limit changes")
        except ERRORS:
            load.count("errors")
        time.sleep(rng.uniform(1, 3))


def event_reader(load):
    """Pages through the log; opens streams and drops them."""
    rng = random.Random(4000)
    since = 0
    while load.running():
        try:
            st, page = load.request("GET", "/v1/events?since=%d&limit=500&wait=1s" % since)
            if st == 200:
                since = page["next"]
                load.count("events read", len(page["events"]))
            if rng.random() < 0.2:
                s = socket.create_connection(("127.0.0.1", load.port), timeout=10)
                s.sendall(b"GET /v1/events/stream?since=%d HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n" % since)
                s.recv(65536)
                time.sleep(rng.uniform(0, 1))
                s.close()
                load.count("streams")
        except ERRORS:
            load.count("errors")
            time.sleep(0.1)


def sample(pid):
    with open("/proc/%d/status" % pid) as f:
        rss = next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))
    fds = len(os.listdir("/proc/%d/fd" % pid))
    return rss, fds


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--minutes", type=float, default=60.0)
    ap.add_argument("--seconds", type=float, default=None, help="overrides --minutes")
    ap.add_argument("--sluiced", default=None, help="the binary (default: $SLUICED or the release build)")
    ap.add_argument("--every", type=float, default=10.0, help="seconds between samples")
    args = ap.parse_args()
    if args.sluiced:
        os.environ["SLUICED"] = os.path.abspath(args.sluiced)
    duration = args.seconds if args.seconds is not None else args.minutes * 60
    srv = fx.Sluiced(config=CONFIG, log_level="warn")
    ok = False
    try:
        pid = srv.proc.pid
        idle_fds = sample(pid)[1]
        load = Load(srv.port, time.monotonic() + duration)
        threads = ([threading.Thread(target=worker, args=(load, i)) for i in range(12)] +
                   [threading.Thread(target=dying_client, args=(load, i)) for i in range(4)] +
                   [threading.Thread(target=group_runner, args=(load, i)) for i in range(3)] +
                   [threading.Thread(target=operator, args=(load,)),
                    threading.Thread(target=event_reader, args=(load,))])
        for t in threads:
            t.daemon = True
            t.start()
        samples = []
        t0 = time.monotonic()
        print("soak: %.0f s against sluiced pid %d on port %d; idle fds %d"
              % (duration, pid, srv.port, idle_fds), flush=True)
        print("%8s %10s %6s %9s %9s %7s" % ("t (s)", "RSS (KiB)", "fds", "pending", "held",
                                           "ended"), flush=True)
        while time.monotonic() < load.deadline:
            time.sleep(min(args.every, max(0.0, load.deadline - time.monotonic())))
            if not srv.alive():
                raise SystemExit("soak: sluiced died:\n" + srv.stderr())
            rss, fds = sample(pid)
            health = srv.get("/healthz").json or {}
            claims = health.get("claims", {})
            samples.append((time.monotonic() - t0, rss, fds))
            print("%8.0f %10d %6d %9s %9s %7s" % (samples[-1][0], rss, fds, claims.get("pending"),
                                                  claims.get("held"), claims.get("ended")),
                  flush=True)
        load.stop.set()
        for t in threads:
            t.join(60)
        # Once the clients are gone their connections close: back to idle.
        fds_after = fx.wait_until(lambda: sample(pid)[1] <= idle_fds + 2 and sample(pid)[1],
                                  30.0, poll_s=0.2, what="descriptors back to idle")
        rss_after = sample(pid)[0]
        print("soak: load %s" % json.dumps(dict(sorted(load.counts.items()))))
        rss = [s[1] for s in samples]
        n = len(rss)
        q2 = statistics.median(rss[n // 4:n // 2]) if n >= 4 else rss[0]
        q4 = statistics.median(rss[3 * n // 4:]) if n >= 4 else rss[-1]
        print("soak: RSS min %d KiB, max %d KiB, median of the 2nd quarter %d KiB, of the last "
              "quarter %d KiB (%+.1f %%), after %d KiB; fds max %d, idle %d, after %d"
              % (min(rss), max(rss), q2, q4, 100.0 * (q4 - q2) / q2, rss_after,
                 max(s[2] for s in samples), idle_fds, fds_after))
        if duration >= 600 and q4 > q2 * 1.2:
            raise SystemExit("soak: memory kept growing in the second half of the run")
        if load.counts.get("held", 0) == 0:
            raise SystemExit("soak: no claim was ever held: the load did not run")
        srv.check_sanitizers()
        ok = True
    finally:
        if not ok:
            srv.dump_stderr("soak")
        srv.stop()
    print("soak: ok")


if __name__ == "__main__":
    main()
