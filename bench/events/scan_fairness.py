#!/usr/bin/env python3
"""scan_fairness.py - F2: does a sparse event-log read loop slow other tenants?

Starts sluiced on a throwaway SQLite store with two limited tokens, fills
the log with about EVENTS events of team-a (claims on unique mutexes, sent
pipelined, then released a holder prefix at a time), and measures team-b's
renew latency (a claim with a 1 s lease renewed every 20 ms) without and
with team-a looping `GET /v1/events?since=0&run=nope` (the review's repro).

  bench/events/scan_fairness.py [--events 1000000] [--budget N] [--attackers 1]
      [--sluiced build/release/src/server/sluiced] [--seconds 10]

Prints p50/p99/max of the renew latency in ms. Timings are not asserted
anywhere: they depend on the machine.
"""
import argparse
import http.client
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time

A, B = "a-secret-0123456789", "b-secret-0123456789"


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def pipelined(port, token, reqs):
    """Sends (method, path, body) requests on one connection, pipelined;
    returns the statuses."""
    s = socket.create_connection(("127.0.0.1", port))
    out = []
    for m, p, b in reqs:
        data = json.dumps(b).encode() if b is not None else b""
        out.append(("%s %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
                    "Content-Type: application/json\r\nContent-Length: %d\r\n\r\n"
                    % (m, p, token, len(data))).encode() + data)
    s.sendall(b"".join(out))
    f = s.makefile("rb")
    statuses = []
    for _ in reqs:
        status = int(f.readline().split()[1])
        n = 0
        while True:
            line = f.readline()
            if line in (b"\r\n", b""):
                break
            k, _, v = line.decode().partition(":")
            if k.lower() == "content-length":
                n = int(v)
        f.read(n)
        statuses.append(status)
    s.close()
    return statuses


def fill(port, events):
    claims = events // 3  # queued, acquired, released
    chunk = 1000
    t0 = time.monotonic()
    for k in range(0, claims, chunk):
        n = min(chunk, claims - k)
        reqs = [("POST", "/v1/claims", {"holder": "team-a/bulk/%d/x" % (k // chunk),
                                        "locks": [{"mutex": "team-a/m/%d" % (k + i)}]})
                for i in range(n)]
        st = pipelined(port, A, reqs)
        assert all(x == 201 for x in st), st[:5]
        st = pipelined(port, A, [("DELETE", "/v1/claims?holder_prefix=team-a/bulk/%d/"
                                  % (k // chunk), None)])
        assert st == [200], st
        if k % 50000 == 0:
            print("  %d claims, %.0f s" % (k, time.monotonic() - t0), file=sys.stderr)
    print("filled %d events in %.0f s" % (claims * 3, time.monotonic() - t0), file=sys.stderr)


def req(conn, method, path, token, body=None):
    h = {"Authorization": "Bearer " + token}
    data = None
    if body is not None:
        data = json.dumps(body)
        h["Content-Type"] = "application/json"
    conn.request(method, path, body=data, headers=h)
    r = conn.getresponse()
    return r.status, r.read()


def renew_latency(port, seconds):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    st, body = req(conn, "POST", "/v1/claims", B, {"holder": "team-b/ci", "lease": "1s",
                                                   "locks": [{"mutex": "team-b/m"}]})
    assert st == 201, body
    cid = json.loads(body)["id"]
    lat, failed = [], 0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        t = time.monotonic()
        st, _ = req(conn, "POST", "/v1/claims/%s/renew" % cid, B, {})
        lat.append((time.monotonic() - t) * 1000)
        failed += st != 200
        time.sleep(0.02)
    req(conn, "DELETE", "/v1/claims/%s" % cid, B)
    lat.sort()
    pct = lambda p: lat[min(len(lat) - 1, int(p * len(lat)))]
    return {"n": len(lat), "p50": pct(0.5), "p99": pct(0.99), "max": lat[-1], "failed": failed}


def abuse(port, stop, stats):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    since = 0
    while not stop.is_set():
        t = time.monotonic()
        st, body = req(conn, "GET", "/v1/events?since=%d&run=nope" % since, A)
        stats.append((time.monotonic() - t) * 1000)
        page = json.loads(body)
        # A client that pages on; the review's loop restarts from 0.
        since = page["next"] if page.get("partial") else 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--events", type=int, default=1000000)
    ap.add_argument("--budget", type=int, default=0, help="limits.max_event_scan (0: default)")
    ap.add_argument("--attackers", type=int, default=1)
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--store", help="an existing store to reuse (skips the fill when it exists)")
    ap.add_argument("--sluiced", default="build/release/src/server/sluiced")
    a = ap.parse_args()
    d = tempfile.mkdtemp(prefix="scan-fairness-")
    store = a.store or os.path.join(d, "s.db")
    refill = not os.path.exists(store)
    port = free_port()
    conf = os.path.join(d, "sluice.yaml")
    with open(conf, "w") as f:
        f.write("listen: 127.0.0.1:%d\nstore: sqlite:%s\nlog_level: info\n" % (port, store))
        f.write("limits:\n  max_claims: 10000000\n")
        if a.budget:
            f.write("  max_event_scan: %d\n" % a.budget)
        # team-a fills the log as fast as it can: no request quota for it.
        f.write('tokens:\n  - {name: a, token: "%s", prefixes: ["team-a/"], '
                'quotas: {requests_per_second: 0}}\n'
                '  - {name: b, token: "%s", prefixes: ["team-b/"]}\n' % (A, B))
    log = open(os.path.join(d, "sluiced.log"), "w+")
    srv = subprocess.Popen([a.sluiced, "--config", conf], stderr=log)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port)).close()
                break
            except OSError:
                assert time.monotonic() < deadline and srv.poll() is None, "sluiced did not start"
                time.sleep(0.05)
        if refill:
            fill(port, a.events)
        else:
            # A start rebuilds the lock history from the log, a page per
            # loop turn: measure after it, not during it.
            while "lock history rebuilt" not in open(log.name).read():
                assert time.monotonic() < deadline + 300, "no history rebuild"
                time.sleep(0.2)
        base = renew_latency(port, a.seconds)
        print("renew without abuse: %s" % json.dumps(base))
        stop, stats = threading.Event(), []
        ts = [threading.Thread(target=abuse, args=(port, stop, stats)) for _ in range(a.attackers)]
        for t in ts:
            t.start()
        time.sleep(0.5)
        loaded = renew_latency(port, a.seconds)
        stop.set()
        for t in ts:
            t.join()
        stats.sort()
        print("renew with %d abusive reader(s): %s" % (a.attackers, json.dumps(loaded)))
        if stats:
            print("abusive reads: n=%d p50=%.2f ms max=%.2f ms"
                  % (len(stats), stats[len(stats) // 2], stats[-1]))
        print("p99 raised by %.2f ms" % (loaded["p99"] - base["p99"]))
    finally:
        srv.terminate()
        srv.wait()


if __name__ == "__main__":
    main()
