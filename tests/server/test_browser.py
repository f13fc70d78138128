#!/usr/bin/env python3
"""test_browser.py - what a web page may not make the server do (F6), and
the start refusal off loopback without tokens (protected mode), and F15's
hardening (the Bearer scheme in any case, obsolete header line folding).

The requests carry the headers a browser sends: a cross-site form POST
(enctype=text/plain), a no-cors fetch from another origin on the same
host (the review's reproduction, page on 127.0.0.1:18350), a DNS-rebinding
Host, and the dashboard's own same-origin requests, which must pass.
Clients that are not browsers (curl -d, urllib) send none of these.
"""
import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sluiced_fixture as fx  # noqa: E402
from sluiced_fixture import ServerTestCase  # noqa: E402

EVIL = "http://127.0.0.1:18350"  # another origin: same host, another port


def form_headers(origin=EVIL):
    """A cross-site <form method=POST enctype=text/plain> as Chromium sends it."""
    return {"Origin": origin, "Content-Type": "text/plain",
            "Sec-Fetch-Site": "same-site", "Sec-Fetch-Mode": "navigate",
            "Sec-Fetch-Dest": "document", "Referer": origin + "/page.html"}


def no_cors_headers(origin=EVIL):
    """fetch(url, {method: "POST", mode: "no-cors", body: JSON.stringify(...)})."""
    return {"Origin": origin, "Content-Type": "text/plain;charset=UTF-8",
            "Sec-Fetch-Site": "same-site", "Sec-Fetch-Mode": "no-cors",
            "Sec-Fetch-Dest": "empty", "Referer": origin + "/page.html"}


class NoTokens(ServerTestCase):
    """The shipped default: no tokens, every request is admin."""

    def own_origin(self):
        return "http://127.0.0.1:%d" % self.srv.port

    def holders(self):
        r = self.srv.get("/v1/claims")
        self.assertEqual(r.status, 200, r)
        return {c["holder"] for c in r.json["claims"]}

    def test_cross_site_form_post_is_refused(self):
        body = b'{"holder":"csrf-form","locks":[{"mutex":"deploy-form"}],"tags":{"x":"=y"}}'
        r = self.srv.request("POST", "/v1/claims", raw=body, headers=form_headers())
        self.assertError(r, 403, "forbidden", "another origin")
        self.assertNotIn("csrf-form", self.holders())

    def test_no_cors_fetch_is_refused(self):
        body = b'{"holder":"csrf-fetch","locks":[{"mutex":"deploy"}]}'
        r = self.srv.request("POST", "/v1/claims", raw=body, headers=no_cors_headers())
        self.assertError(r, 403, "forbidden")
        self.assertNotIn("csrf-fetch", self.holders())

    def test_cancel_in_progress_from_another_page_revokes_nothing(self):
        job = self.srv.claim("deploy-job-77", group="repo/main", lease="1h")
        body = b'{"holder":"csrf","groups":[{"name":"repo/main","cancel":"in-progress"}]}'
        r = self.srv.request("POST", "/v1/claims", raw=body, headers=no_cors_headers())
        self.assertError(r, 403, "forbidden")
        self.assertEqual(self.srv.claim_get(job["id"])["state"], "held")
        self.srv.release(job["id"])

    def test_old_browser_signs_need_a_json_type(self):
        """Without Origin or Sec-Fetch-* (an old browser), a Referer still
        shows a browser: its form body is refused."""
        body = b'{"holder":"csrf-old","locks":[{"mutex":"old"}]}'
        r = self.srv.request("POST", "/v1/claims", raw=body,
                             headers={"Content-Type": "application/x-www-form-urlencoded",
                                      "Referer": EVIL + "/"})
        self.assertError(r, 403, "forbidden", "Content-Type: application/json")
        self.assertNotIn("csrf-old", self.holders())

    def test_null_origin_and_cross_site_fetch_metadata_are_refused(self):
        r = self.srv.delete("/v1/claims?holder_prefix=x", headers={"Origin": "null"})
        self.assertError(r, 403, "forbidden")
        r = self.srv.put("/v1/semaphores/s", {"limit": 1},
                         headers={"Sec-Fetch-Site": "cross-site"})
        self.assertError(r, 403, "forbidden", "another site")

    def test_curl_and_urllib_forms_keep_working(self):
        """curl -d sends application/x-www-form-urlencoded and no browser sign."""
        body = b'{"holder":"curl-d","locks":[{"mutex":"curl"}]}'
        r = self.srv.request("POST", "/v1/claims", raw=body,
                             headers={"Content-Type": "application/x-www-form-urlencoded"})
        self.assertEqual(r.status, 201, r)
        self.srv.release(r.json["id"])

    def test_the_dashboards_own_requests_pass(self):
        same = {"Origin": self.own_origin(), "Sec-Fetch-Site": "same-origin",
                "Sec-Fetch-Mode": "cors", "Referer": self.own_origin() + "/claims"}
        r = self.srv.post("/v1/claims", {"holder": "ui", "locks": [{"mutex": "ui"}]},
                          headers=same)
        self.assertEqual(r.status, 201, r)
        r = self.srv.delete("/v1/claims/%s" % r.json["id"], headers=same)
        self.assertEqual(r.status, 200, r)
        r = self.srv.get("/v1/status", headers={"Sec-Fetch-Site": "same-origin"})
        self.assertEqual(r.status, 200, r)
        self.assertEqual(self.srv.get("/", headers={"Sec-Fetch-Site": "none"}).status, 200)

    def test_a_rebinding_host_is_refused(self):
        for path in ("/v1/status", "/", "/healthz"):
            r = self.srv.get(path, headers={"Host": "evil.example:%d" % self.srv.port})
            self.assertError(r, 403, "forbidden", "allowed_hosts")
        r = self.srv.post("/v1/claims", {"holder": "rebound", "locks": [{"mutex": "r"}]},
                          headers={"Host": "evil.example:%d" % self.srv.port,
                                   "Origin": "http://evil.example:%d" % self.srv.port})
        self.assertError(r, 403, "forbidden", "evil.example")
        self.assertNotIn("rebound", self.holders())

    def test_the_hosts_it_answers_for(self):
        p = self.srv.port
        for host in ("127.0.0.1:%d" % p, "localhost:%d" % p, "LocalHost.:%d" % p,
                     "[::1]:%d" % p, "10.1.2.3", "localhost"):
            r = self.srv.get("/v1/status", headers={"Host": host})
            self.assertEqual(r.status, 200, (host, r))
        s = self.srv.raw_socket()  # HTTP/1.0 without Host: no browser
        s.sendall(b"GET /v1/status HTTP/1.0\r\n\r\n")
        line = s.recv(64).split(b"\r\n")[0]
        self.assertIn(b" 200 ", line)
        s.close()


class AllowedHosts(ServerTestCase):
    CONFIG = "allowed_hosts: [sluice.example.com]\n"

    def test_a_listed_name_passes_and_others_do_not(self):
        p = self.srv.port
        r = self.srv.get("/v1/status", headers={"Host": "Sluice.Example.com:%d" % p})
        self.assertEqual(r.status, 200, r)
        r = self.srv.get("/v1/status", headers={"Host": "other.example.com:%d" % p})
        self.assertError(r, 403, "forbidden", "other.example.com")


SECRET = "browser-test-secret-1"


class WithTokens(ServerTestCase):
    CONFIG = "tokens:\n  - {name: ops, token: %s, admin: true}\n" % SECRET

    def test_any_host_passes_the_secret_is_the_guard(self):
        """A rebound page has no token to send: the Host is not checked."""
        r = self.srv.get("/v1/status", token=SECRET,
                         headers={"Host": "sluice.sluice.svc:%d" % self.srv.port})
        self.assertEqual(r.status, 200, r)

    def test_the_bearer_scheme_in_any_case(self):
        for scheme in ("Bearer", "bearer", "BEARER", "bEaReR"):
            r = self.srv.get("/v1/status", token="",
                             headers={"Authorization": "%s %s" % (scheme, SECRET)})
            self.assertEqual(r.status, 200, (scheme, r))
        r = self.srv.get("/v1/status", token="", headers={"Authorization": "Basic " + SECRET})
        self.assertError(r, 401, "unauthorized")

    def test_a_cross_origin_request_is_refused_with_a_token_too(self):
        r = self.srv.post("/v1/claims", {"holder": "x", "locks": [{"mutex": "x"}]},
                          token=SECRET, headers={"Origin": EVIL})
        self.assertError(r, 403, "forbidden")


class Folding(ServerTestCase):
    def answer(self, raw, bytewise=False):
        s = self.srv.raw_socket()
        if bytewise:  # each byte its own segment: the parser's spans end at every byte
            s.setsockopt(fx.socket.IPPROTO_TCP, fx.socket.TCP_NODELAY, 1)
            for i in range(len(raw)):
                s.sendall(raw[i:i + 1])
        else:
            s.sendall(raw)
        out = b""
        while b"\r\n\r\n" not in out:
            data = s.recv(4096)
            if not data:
                break
            out += data
        s.close()
        return out

    def test_obsolete_line_folding_is_refused(self):
        head = b"GET /v1/status HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
        for fold in (b"X: a\r\n\tTransfer-Encoding: chunked\r\n", b"X: a\r\n  b\r\n",
                     b"X:\r\n b\r\n"):
            out = self.answer(head + fold + b"\r\n")
            self.assertTrue(out.startswith(b"HTTP/1.1 400"), (fold, out))
        out = self.answer(head + b"X:   a b\t\r\n\r\n")
        self.assertTrue(out.startswith(b"HTTP/1.1 200"), out)

    def test_folding_split_across_reads_is_refused_and_values_are_not(self):
        head = b"GET /v1/status HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
        out = self.answer(head + b"X: a\r\n b\r\n\r\n", bytewise=True)
        self.assertTrue(out.startswith(b"HTTP/1.1 400"), out)
        out = self.answer(head + b"X: a  b\r\n\r\n", bytewise=True)
        self.assertTrue(out.startswith(b"HTTP/1.1 200"), out)


class ProtectedMode(unittest.TestCase):
    def run_sluiced(self, *args):
        d = fx.tempfile.mkdtemp(prefix="sluiced-test-")
        cmd = [fx.binary(), "--store", "sqlite:" + os.path.join(d, "s.db")] + list(args)
        return subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, timeout=20)

    def test_off_loopback_without_tokens_does_not_start(self):
        for listen in ("0.0.0.0:1", "[::]:1", "192.0.2.7:1", "sluice.example.com:1"):
            p = self.run_sluiced("--listen", listen)
            self.assertEqual(p.returncode, 2, (listen, p))
            err = p.stderr.decode()
            self.assertIn("tokens and TLS", err)
            self.assertIn("insecure_open: true", err)
            self.assertIn("--allow-open", err)


if __name__ == "__main__":
    fx.main()
