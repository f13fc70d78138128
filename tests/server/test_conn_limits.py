#!/usr/bin/env python3
"""test_conn_limits.py - connection limits against exhaustion (F1 in docs/security.md).

An attacker's half-sent requests must not take every connection slot: a
cap per client address (limits.max_connections_per_client), a deadline
for a request's line and headers (limits.header_timeout), and the last
tenth of limits.max_connections kept for requests with a valid token. The
attackers connect from other loopback addresses (127.0.0.2 and up: all of
127/8 is loopback on Linux) so that the fixture's own requests, from
127.0.0.1, are "another client".
"""
import os
import re
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sluiced_fixture as fx  # noqa: E402
from sluiced_fixture import ServerTestCase, Sluiced, wait_until  # noqa: E402

ADMIN, TEAM_A = "adm-secret-0123456789", "a-secret-0123456789"
TOKENS = """
tokens:
  - {name: admin, token: "%s", admin: true}
  - {name: team-a, token: "%s", prefixes: ["team-a/"]}
""" % (ADMIN, TEAM_A)
HALF = b"POST /v1/claims HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n"  # never finished
DEADLINE_S = 10


def half_sent(port, source):
    """A connection from source that sends half a request's headers."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(DEADLINE_S)
    s.bind((source, 0))
    s.connect(("127.0.0.1", port))
    s.sendall(HALF)
    return s


def closed_by_server(s):
    """Waits (up to the socket's timeout) for what the server sends before
    it closes: the bytes, b"" for a bare close."""
    got = b""
    try:
        while True:
            chunk = s.recv(4096)
            if not chunk:
                return got
            got += chunk
    except ConnectionResetError:
        return got


def refused(srv, reason):
    """sluice_http_connections_refused_total{reason} in /metrics."""
    text = srv.get("/metrics", token=ADMIN).body.decode()
    m = re.search(r'^sluice_http_connections_refused_total\{reason="%s"\} (\d+)$' % reason,
                  text, re.M)
    return int(m.group(1)) if m else None


class TestPerClientCap(ServerTestCase):
    """F1's reproduction: one client opens many half-sent requests; the
    others, an admin among them, still get answers and renew."""
    CONFIG = TOKENS + "limits:\n  max_connections: 40\n  max_connections_per_client: 8\n"
    TOKEN = ADMIN

    def test_one_address_cannot_take_every_slot(self):
        claim = self.srv.claim("team-a/run", [("m", "team-a/m")], lease="30s")
        socks = []
        try:
            for _ in range(30):
                socks.append(half_sent(self.srv.port, "127.0.0.2"))
            # The 9th and later are turned away at accept: 503, closed.
            turned = [s for s in socks[8:]]
            for s in turned:
                got = closed_by_server(s)
                self.assertTrue(got == b"" or got.startswith(b"HTTP/1.1 503"), got)
                if got:
                    self.assertIn(b"limits.max_connections_per_client", got)
            # The first 8 are still open (waiting for the rest of their headers).
            # Meanwhile another client (127.0.0.1), limited and admin, is served.
            r = self.srv.get("/v1/claims?holder=team-a/run", token=TEAM_A)
            self.assertEqual(r.status, 200, r)
            r = self.srv.post("/v1/claims/%s/renew" % claim["id"], {"lease": "30s"})
            self.assertEqual(r.status, 200, r)
            self.assertEqual(refused(self.srv, "per_client"), 22)
        finally:
            for s in socks:
                s.close()
        self.srv.release(claim["id"])


class TestReservedSlots(ServerTestCase):
    """The last tenth of max_connections is kept for requests with a valid
    token: many addresses, each under its cap, cannot take it."""
    CONFIG = TOKENS + "limits:\n  max_connections: 20\n  max_connections_per_client: 2\n"
    TOKEN = ADMIN

    def test_last_slots_need_a_token(self):
        socks = []
        try:
            # 18 half-sent requests from 18 addresses fill the open slots
            # (20 minus the 2 kept).
            for i in range(18):
                socks.append(half_sent(self.srv.port, "127.0.0.%d" % (10 + i)))
            wait_until(lambda: len(socks) == 18, 1)
            # A request without a token on a kept slot: 503 and closed.
            s = socket.create_connection(("127.0.0.1", self.srv.port), timeout=DEADLINE_S)
            s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            got = closed_by_server(s)
            s.close()
            self.assertTrue(got.startswith(b"HTTP/1.1 503"), got)
            self.assertIn(b"valid token", got)
            # With a token it is served, and the admin can still renew.
            r = self.srv.get("/v1/status", token=TEAM_A)
            self.assertEqual(r.status, 200, r)
            c = self.srv.claim("team-a/r", [("m", "team-a/r")], lease="30s")
            self.assertEqual(self.srv.post("/v1/claims/%s/renew" % c["id"],
                                           {"lease": "30s"}).status, 200)
            self.srv.release(c["id"])
            self.assertGreaterEqual(refused(self.srv, "reserved"), 1)
        finally:
            for s in socks:
                s.close()


class TestHeaderDeadline(ServerTestCase):
    """A request's line and headers must arrive within header_timeout,
    which is shorter than the keep-alive idle timeout."""
    CONFIG = TOKENS + "limits:\n  header_timeout: 300ms\n  idle_timeout: 60s\n"
    TOKEN = ADMIN

    def test_half_a_header_is_closed_after_the_deadline(self):
        t0 = time.monotonic()
        s = half_sent(self.srv.port, "127.0.0.2")
        try:
            got = closed_by_server(s)
        finally:
            s.close()
        took = time.monotonic() - t0
        self.assertGreaterEqual(took, 0.3)
        self.assertLess(took, DEADLINE_S - 1, "closed by the idle timeout, not the deadline")
        self.assertTrue(got == b"" or got.startswith(b"HTTP/1.1 408"), got)
        wait_until(lambda: (refused(self.srv, "header_timeout") or 0) >= 1, DEADLINE_S,
                   what="the timeout counted")

    def test_a_connection_that_sends_nothing_is_closed_too(self):
        s = socket.create_connection(("127.0.0.1", self.srv.port), timeout=DEADLINE_S)
        try:
            self.assertEqual(closed_by_server(s), b"")
        finally:
            s.close()

    def test_a_whole_request_then_idle_keeps_the_idle_timeout(self):
        """After an answer the connection waits idle_timeout (60 s here)
        for the next request, not header_timeout: a second request sent
        after more than 300 ms is answered on the same connection."""
        s = socket.create_connection(("127.0.0.1", self.srv.port), timeout=DEADLINE_S)
        try:
            s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            self.assertTrue(s.recv(4096).startswith(b"HTTP/1.1 200"))
            # The deadline's whole length, and more, with nothing sent.
            s.settimeout(0.6)
            with self.assertRaises(socket.timeout):
                s.recv(1)
            s.settimeout(DEADLINE_S)
            s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            self.assertTrue(s.recv(4096).startswith(b"HTTP/1.1 200"))
        finally:
            s.close()


if __name__ == "__main__":
    fx.main()
