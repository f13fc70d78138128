"""test_load_checks.py - sluice-load's correctness checks can fail.

bench/load-short shows that sluice-load passes against a good sluiced; this
shows that it would not pass against a bad one. A fake sluiced (a few routes
of the API, in Python) grants every claim at once and breaks one promise per
mode: fencing tokens that stop growing, a release answered 500, an event log
that never records a release (so two claims hold the mutex at once), one that
queues a phantom claim ahead of every real one (FIFO order broken), one that
loses grants, a response that is not valid HTTP. sluice-load must exit 1 and
name the problem each time, and exit 0 against the fake's honest mode, so
that what fails is the broken promise and not the fake itself.

The binary comes from the environment variable SLUICE_LOAD (CTest sets it),
or from the first command-line argument.
"""
import json
import os
import subprocess
import sys
import threading
import unittest
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

RUN_TIMEOUT_S = 60


class FakeSluiced(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, mode):
        super().__init__(("127.0.0.1", 0), Handler)
        self.mode = mode
        self.lock = threading.Lock()
        self.events = []  # dicts with seq
        self.claims = 0
        self.tokens = {}  # lock key -> last token

    def log(self, type_, claim, key):
        self.events.append({"seq": len(self.events) + 1, "time": "2026-11-23T00:00:00.000Z",
                            "type": type_, "claim": claim, "holder": "h", "locks": [key],
                            "reason": ""})


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body are separate writes

    def log_message(self, *args):
        pass

    def reply(self, status, body):
        data = json.dumps(body).encode() if body is not None else b""
        self.send_response(status)
        if status == 201:
            self.send_header("Location", "/v1/claims/" + body["id"])
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def body(self):
        n = int(self.headers.get("Content-Length", "0"))
        return json.loads(self.rfile.read(n) or b"{}")

    def do_GET(self):
        url = urllib.parse.urlparse(self.path)
        srv = self.server
        with srv.lock:
            if url.path in ("/healthz", "/v1/status"):
                return self.reply(200, {"status": "ok", "next_seq": len(srv.events) + 1})
            if url.path == "/v1/events":
                q = urllib.parse.parse_qs(url.query)
                since, limit = int(q["since"][0]), int(q["limit"][0])
                page = [e for e in srv.events if e["seq"] > since][:limit]
                nxt = page[-1]["seq"] if page else since
                return self.reply(200, {"events": page, "next": nxt})
        self.reply(404, {"error": {"code": "not_found", "message": self.path}})

    def do_PUT(self):
        self.body()
        self.reply(200, {"kind": "semaphore"})

    def do_POST(self):
        srv, req = self.server, self.body()
        lock = req["locks"][0]
        key = ("mtx/" + lock["mutex"]) if "mutex" in lock else ("sem/" + lock["semaphore"])
        with srv.lock:
            srv.claims += 1
            cid = "claim-%d" % srv.claims
            token = srv.tokens.get(key, 0) + 1
            if srv.mode != "stuck-token":
                srv.tokens[key] = token
            if srv.mode == "phantom-ahead":
                srv.log("claim.queued", "phantom-%d" % srv.claims, key)
            srv.log("claim.queued", cid, key)
            if srv.mode != "lost-grant" or srv.claims > 1:  # the first grant goes unlogged
                srv.log("claim.acquired", cid, key)
        if srv.mode == "not-http":
            self.wfile.write(b"HTTP/1.1 201 Created\r\nContent-Length: x\r\n\r\n")
            return
        self.reply(201, {"id": cid, "state": "held", "locks": [{"token": token}]})

    def do_DELETE(self):
        srv = self.server
        if self.path.startswith("/v1/semaphores/"):
            return self.reply(204, None)
        cid = self.path.rsplit("/", 1)[1]
        if srv.mode == "delete-500":
            return self.reply(500, {"error": {"code": "internal", "message": "broken"}})
        with srv.lock:
            if srv.mode != "no-release-event":
                key = next(e["locks"][0] for e in srv.events if e["claim"] == cid)
                srv.log("claim.released", cid, key)
        self.reply(200, {"id": cid, "state": "released"})


def binary():
    return os.environ.get("SLUICE_LOAD") or os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "..", "build", "release", "bench",
        "load", "sluice-load")


class LoadChecks(unittest.TestCase):
    def run_against(self, mode, *workload):
        srv = FakeSluiced(mode)
        t = threading.Thread(target=srv.serve_forever, daemon=True)
        t.start()
        try:
            args = [binary(), "--server", "127.0.0.1:%d" % srv.server_address[1],
                    "-d", "0.3", "-w", "0"] + list(workload or ["-c", "1", "uncontended"])
            p = subprocess.run(args, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
        finally:
            srv.shutdown()
            srv.server_close()
        return p.returncode, p.stdout + p.stderr

    def assert_fails(self, mode, needle, *workload):
        rc, out = self.run_against(mode, *workload)
        self.assertEqual(rc, 1, out)
        self.assertIn("FAILED", out)
        self.assertIn(needle, out)

    def test_honest_fake_passes(self):
        rc, out = self.run_against("honest")
        self.assertEqual(rc, 0, out)
        self.assertIn("uncontended 1: ok", out)
        self.assertIn("0 out of FIFO order, 0 over the limit", out)

    def test_honest_fake_passes_with_two_clients_on_one_semaphore(self):
        rc, out = self.run_against("honest", "--semaphore-clients", "2", "--semaphore-limit",
                                   "2", "semaphore")
        self.assertEqual(rc, 0, out)

    def test_tokens_that_stop_growing(self):
        self.assert_fails("stuck-token", "tokens WENT BACKWARDS")

    def test_release_answered_500(self):
        self.assert_fails("delete-500", "answered 500 instead of 200")

    def test_two_holders_in_the_event_log(self):
        rc, out = self.run_against("no-release-event")
        self.assertEqual(rc, 1, out)
        self.assertRegex(out, r"0 out of FIFO order, [1-9][0-9]* over the limit")

    def test_grant_out_of_fifo_order(self):
        rc, out = self.run_against("phantom-ahead")
        self.assertEqual(rc, 1, out)
        self.assertRegex(out, r" [1-9][0-9]* out of FIFO order, 0 over the limit")

    def test_grants_missing_from_the_log(self):
        rc, out = self.run_against("lost-grant")
        self.assertEqual(rc, 1, out)
        self.assertIn("uncontended 1: FAILED", out)
        self.assertRegex(out, r"event log: \d+ events, (\d+) grants \(the clients saw (?!\1\))")

    def test_response_that_is_not_http(self):
        self.assert_fails("not-http", "Content-Length is not a decimal number")


if __name__ == "__main__":
    if len(sys.argv) > 1 and os.path.isfile(sys.argv[1]):
        os.environ["SLUICE_LOAD"] = os.path.abspath(sys.argv.pop(1))
    unittest.main(verbosity=2)
