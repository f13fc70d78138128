#!/usr/bin/env python3
"""test_bad_input.py - what hostile or broken clients send, black box.

Bounds of docs/api.md (bodies over 64 KiB: 413; JSON deeper than 32 levels,
names over 253 characters, more than 64 locks: 400), truncated and
abandoned requests, a slow client, garbage bytes, invalid UTF-8, numbers
JSON allows but the API does not. After each test the server must still
answer /healthz, grant a fresh claim, and still hold the claims made before
(nothing lost, nothing changed).
"""
import random
import socket
import time

import sluiced_fixture as fx
from sluiced_fixture import ServerTestCase

MAX_BODY = 64 * 1024


def read_reply(sock, deadline_s=5.0):
    """Reads one HTTP reply (or whatever comes until the peer closes or the
    Content-Length is satisfied); returns (status or None, raw bytes)."""
    sock.settimeout(deadline_s)
    data = b""
    try:
        while True:
            if b"\r\n\r\n" in data:
                head, _, body = data.partition(b"\r\n\r\n")
                length = None
                for line in head.split(b"\r\n")[1:]:
                    k, _, v = line.partition(b":")
                    if k.strip().lower() == b"content-length":
                        length = int(v.strip())
                if length is not None and len(body) >= length:
                    break
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
    except (socket.timeout, ConnectionResetError):
        pass
    status = None
    if data.startswith(b"HTTP/1."):
        try:
            status = int(data.split(b" ", 2)[1])
        except (IndexError, ValueError):
            status = None
    return status, data


class BadInputCase(ServerTestCase):
    """Each test ends by checking the server still serves and that the
    claims made at the start of the class are exactly as they were."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.srv.sem_put("bad/pool", 2)
        cls.keep_held = cls.srv.claim("keeper", [("m", "bad/keep"), ("s", "bad/pool", 2)])
        cls.keep_pending = cls.srv.claim("keeper", [("m", "bad/keep")])
        assert cls.keep_held["state"] == "held" and cls.keep_pending["state"] == "pending"

    def tearDown(self):
        self.assertStillServing()
        h = self.srv.claim_get(self.keep_held["id"])
        self.assertEqual(h["state"], "held")
        self.assertEqual(h["locks"], self.keep_held["locks"])
        p = self.srv.claim_get(self.keep_pending["id"])
        self.assertEqual(p["state"], "pending")
        self.assertEqual(p["locks"][0]["position"], 1)

    def send_raw(self, data, close_after=True, deadline_s=5.0):
        """Sends bytes on a fresh socket and reads what comes back."""
        s = self.srv.raw_socket()
        try:
            try:
                s.sendall(data)
            except (BrokenPipeError, ConnectionResetError):
                pass
            return read_reply(s, deadline_s)
        finally:
            if close_after:
                s.close()

    def no_claims_of(self, holder):
        self.assertEqual(self.srv.get("/v1/claims?holder=" + holder).json["claims"], [])


class TestBounds(BadInputCase):
    def test_body_over_64k_is_413(self):
        """A body of 64 KiB + 1 is 413 too_large; one of exactly 64 KiB is
        read (and here refused 400 for its unknown field); nothing is made."""
        def body(size):
            head, tail = b'{"holder":"big","locks":[{"mutex":"bad/big"}],"pad":"', b'"}'
            return head + b"a" * (size - len(head) - len(tail)) + tail

        r = self.srv.post("/v1/claims", raw=body(MAX_BODY + 1))
        self.assertError(r, 413, "too_large")
        r = self.srv.put("/v1/semaphores/bad/big", raw=body(MAX_BODY + 1))
        self.assertError(r, 413, "too_large")
        r = self.srv.post("/v1/claims", raw=body(MAX_BODY))
        self.assertError(r, 400, "bad_request")
        r = self.srv.post("/v1/claims", raw=body(4 * MAX_BODY))
        self.assertError(r, 413, "too_large")
        self.no_claims_of("big")

    def test_huge_body_and_length(self):
        """Far bigger bodies and absurd Content-Lengths are refused without
        reading them all (413 or a closed connection), never a crash."""
        status, _ = self.send_raw(b"POST /v1/claims HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                  b"Content-Length: 100000000000\r\n\r\n{")
        self.assertIn(status, (400, 413, None))
        big = b'{"holder":"big","pad":"' + b"b" * (3 << 20) + b'"}'
        status, _ = self.send_raw(b"POST /v1/claims HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: %d"
                                  b"\r\n\r\n" % len(big) + big)
        self.assertIn(status, (413, None))
        self.no_claims_of("big")

    def test_nesting(self):
        """JSON nested 33 levels is 400 for its depth; 32 levels is parsed (and
        refused for its type); brackets inside strings do not count; very
        deep nesting does not hurt."""
        def nested(depth):
            return b'{"limit":' + b"[" * (depth - 1) + b"1" + b"]" * (depth - 1) + b"}"

        r = self.srv.put("/v1/semaphores/bad/deep", raw=nested(33))
        self.assertError(r, 400, "bad_request", contains="nested")
        r = self.srv.put("/v1/semaphores/bad/deep", raw=nested(32))
        self.assertError(r, 400, "bad_request")
        self.assertNotIn("nested", r.json["error"]["message"])
        r = self.srv.post("/v1/claims", raw=b"[" * 30000 + b"]" * 30000)
        self.assertError(r, 400, "bad_request")
        r = self.srv.post("/v1/claims", raw=b"{" * 50000)
        self.assertError(r, 400, "bad_request")
        holder = '\\"' + "[" * 40 + "{" * 40
        c = self.srv.post("/v1/claims", raw=('{"holder":"%s","locks":[{"mutex":"bad/str"}]}'
                                            % holder).encode())
        self.assertEqual(c.status, 201, c)
        self.assertEqual(c.json["holder"], '"' + "[" * 40 + "{" * 40)
        self.srv.release(c.json["id"])

    def test_long_names(self):
        """Names of 254 characters are 400 everywhere; 253 are fine."""
        long_name, ok_name = "n" * 254, "n" * 253
        self.assertError(self.srv.post("/v1/claims", {"holder": "ln", "locks": [
            {"mutex": long_name}]}), 400, "bad_request")
        self.assertError(self.srv.post("/v1/claims", {"holder": "ln", "group": long_name}),
                         400, "bad_request")
        self.assertError(self.srv.post("/v1/claims", {"holder": "ln", "locks": [
            {"mutex": "bad/m"}], "tags": {long_name: "v"}}), 400, "bad_request")
        self.assertError(self.srv.put("/v1/semaphores/" + long_name, {"limit": 1}), 400,
                         "bad_request")
        self.assertError(self.srv.get("/v1/mutexes/" + long_name), 400, "bad_request")
        self.assertError(self.srv.get("/v1/claims?lock=mtx/" + long_name), 400, "bad_request")
        self.assertError(self.srv.get("/v1/queue?lock=mtx/" + long_name), 400, "bad_request")
        self.no_claims_of("ln")
        c = self.srv.claim("ln", [("m", ok_name)])
        self.assertEqual(c["locks"][0]["name"], ok_name)
        self.srv.release(c["id"])
        self.assertError(self.srv.get("/v1/mutexes/" + "n" * 5000), 400, "bad_request")

    def test_lock_count(self):
        """65 locks are 400; 64 are granted together, one token each."""
        locks = [{"mutex": "bad/many/%d" % i} for i in range(65)]
        self.assertError(self.srv.post("/v1/claims", {"holder": "many", "locks": locks}),
                         400, "bad_request")
        self.no_claims_of("many")
        c = self.srv.claim("many", locks[:64])
        self.assertEqual(c["state"], "held")
        self.assertEqual(len(c["locks"]), 64)
        self.assertTrue(all(isinstance(l["token"], int) for l in c["locks"]))
        self.srv.release(c["id"])
        tags = {"k%d" % i: "v" for i in range(33)}
        self.assertError(self.srv.post("/v1/claims", {"holder": "many", "tags": tags}), 400,
                         "bad_request")

    def test_numbers(self):
        """Numbers JSON allows but the API cannot hold: 400, never wrapped."""
        raws = [
            b'{"holder":"num","locks":[{"mutex":"bad/num"}],"priority":1e400}',
            b'{"holder":"num","locks":[{"mutex":"bad/num"}],"priority":99999999999999999999999}',
            b'{"holder":"num","locks":[{"mutex":"bad/num"}],"priority":-2147483649}',
            b'{"holder":"num","locks":[{"mutex":"bad/num"}],"priority":2147483648}',
            b'{"holder":"num","locks":[{"semaphore":"bad/pool","slots":9223372036854775808}]}',
            b'{"holder":"num","locks":[{"semaphore":"bad/pool","slots":4294967297}]}',
            b'{"holder":"num","locks":[{"semaphore":"bad/pool","slots":-1}]}',
            b'{"holder":"num","locks":[{"semaphore":"bad/pool","slots":-9223372036854775808}]}',
            b'{"holder":"num","locks":[{"semaphore":"bad/pool","slots":0}]}',
            b'{"holder":"num","locks":[{"semaphore":"bad/pool","slots":1e3}]}',
            b'{"holder":"num","locks":[{"mutex":"bad/num"}],"lease":1e300}',
            b'{"holder":"num","locks":[{"mutex":"bad/num"}],"lease":-0.5}',
            b'{"holder":"num","locks":[{"mutex":"bad/num"}],"timeout":"99999999999h"}',
            b'{"holder":"num","locks":[{"mutex":"bad/num"}],"wait":1e20}',
            b'{"holder":"num","locks":[{"mutex":"bad/num"}],"grace":NaN}',
            b'{"holder":"num","locks":[{"mutex":"bad/num"}],"lease":Infinity}',
            b'{"holder":"num","locks":[{"mutex":"bad/num"}],"created":"99999-01-01T00:00:00.000Z"}',
            b'{"holder":"num","locks":[{"mutex":"bad/num"}],"created":"2026-13-45T25:61:61.000Z"}',
        ]
        for raw in raws:
            self.assertError(self.srv.post("/v1/claims", raw=raw), 400, "bad_request")
        for lim in (b"4294967296", b"-1", b"1e10", b"99999999999999999999999", b"1.0"):
            self.assertError(self.srv.put("/v1/semaphores/bad/num", raw=b'{"limit":' + lim + b"}"),
                             400, "bad_request")
        self.assertError(self.srv.get("/v1/events?since=99999999999999999999999"), 400)
        self.assertError(self.srv.get("/v1/events?limit=-5"), 400)
        self.no_claims_of("num")
        self.assertEqual(self.srv.get("/v1/semaphores/bad/pool").json["limit"], 2)

    def test_strings(self):
        """Invalid UTF-8, NUL and lone surrogates in JSON strings are 400; so
        is a NUL or a bad escape in the URL path."""
        raws = [
            b'{"holder":"\xff\xfe","locks":[{"mutex":"bad/u"}]}',
            b'{"holder":"utf","locks":[{"mutex":"bad/\xc3"}]}',
            b'{"holder":"utf","locks":[{"mutex":"bad/\xc0\xaf"}]}',
            b'{"holder":"utf","locks":[{"mutex":"bad/\xed\xa0\x80"}]}',
            b'{"holder":"utf\\u0000x","locks":[{"mutex":"bad/u"}]}',
            b'{"holder":"utf","locks":[{"mutex":"bad/\\ud800"}]}',
            b'{"holder":"utf","locks":[{"mutex":"bad/\\u00e9"}]}',
            b'{"holder":"utf","locks":[{"mutex":"bad/u"}],"tags":{"\xff":"v"}}',
            b'{"holder":"utf","locks":[{"mutex":"bad/u"}],"\xff":1}',
            b'{"holder":"utf","locks":[{"mutex":"bad/u"}],"tags":{"k":"v\\n"}}',
            b"\xef\xbb\xbf" + b'{"holder":"utf","locks":[{"mutex":"bad/u"}]}\x00',
        ]
        for raw in raws:
            self.assertError(self.srv.post("/v1/claims", raw=raw), 400, "bad_request")
        self.no_claims_of("utf")
        for path in ("/v1/mutexes/bad%00x", "/v1/mutexes/bad%zz", "/v1/mutexes/bad%",
                     "/v1/mutexes/bad%4", "/v1/claims/%00"):
            r = self.srv.get(path)
            self.assertIn(r.status, (400, 404), (path, r))
            self.assertIsNotNone(r.error_code, (path, r))
        self.assertError(self.srv.get("/v1/mutexes/" + "a/" * 1500 + "b"), 400)
        # Unicode the API allows in a holder (any string) round-trips.
        c = self.srv.claim("h\u00e9\u4e2d\U0001f600", [("m", "bad/u")])
        self.assertEqual(c["holder"], "h\u00e9\u4e2d\U0001f600")
        self.srv.release(c["id"])


class TestBrokenClients(BadInputCase):
    def test_truncated_requests(self):
        """Half a request line, half the headers, or a body shorter than its
        Content-Length, then the client closes: nothing is created."""
        body = b'{"holder":"trunc","locks":[{"mutex":"bad/trunc"}]}'
        full = (b"POST /v1/claims HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                b"Content-Length: %d\r\n\r\n" % len(body)) + body
        for cut in (5, 20, 40, 60, len(full) - len(body) - 2, len(full) - len(body),
                    len(full) - 10, len(full) - 1):
            s = self.srv.raw_socket()
            s.sendall(full[:cut])
            s.close()
        s = self.srv.raw_socket()
        s.sendall(full.replace(b"Content-Length: %d" % len(body), b"Content-Length: 500"))
        s.close()
        # A last complete request on a new connection is served after them all.
        self.assertStillServing()
        self.no_claims_of("trunc")
        # The abandoned connections did not wedge anything: the same bytes,
        # sent whole, make a claim.
        status, data = self.send_raw(full)
        self.assertEqual(status, 201, data)
        self.assertEqual(len(self.srv.get("/v1/claims?holder=trunc").json["claims"]), 1)
        cid = self.srv.get("/v1/claims?holder=trunc").json["claims"][0]["id"]
        self.srv.release(cid)

    def test_half_closed_after_request(self):
        """A client that sends a complete request and shuts down its sending
        side still gets its answer."""
        s = self.srv.raw_socket()
        try:
            s.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            s.shutdown(socket.SHUT_WR)
            status, data = read_reply(s)
        finally:
            s.close()
        self.assertIn(status, (200, None), data)

    def test_slow_client(self):
        """Headers and body sent byte by byte over about two seconds: the
        server answers other clients meanwhile, then answers this one."""
        body = b'{"holder":"slow","locks":[{"mutex":"bad/slow"}]}'
        req = (b"POST /v1/claims HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
               b"Content-Length: %d\r\n\r\n" % len(body)) + body
        delay = 2.0 / len(req)
        s = self.srv.raw_socket(timeout=10)
        try:
            for i, byte in enumerate(req):
                s.sendall(bytes([byte]))
                time.sleep(delay)  # the deliberately slow client
                if i == len(req) // 2:
                    t0 = time.monotonic()
                    self.assertTrue(self.srv.healthy())
                    self.assertLess(time.monotonic() - t0, 1.0)
            status, data = read_reply(s)
        finally:
            s.close()
        self.assertEqual(status, 201, data)
        c = self.srv.get("/v1/claims?holder=slow").json["claims"]
        self.assertEqual([x["state"] for x in c], ["held"])
        self.srv.release(c[0]["id"])

    def test_many_requests_one_connection(self):
        """Pipelined requests on one keep-alive connection are each answered."""
        one = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
        s = self.srv.raw_socket()
        try:
            s.sendall(one * 20)
            s.settimeout(5)
            data = b""
            end = time.monotonic() + 5
            while data.count(b"HTTP/1.1 200") < 20 and time.monotonic() < end:
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
        finally:
            s.close()
        self.assertEqual(data.count(b"HTTP/1.1 200"), 20)

    def test_garbage(self):
        """Random bytes, binary noise, TLS and HTTP/2 prefaces, broken request
        lines and headers: an error status or a closed connection, never a
        crash or a hang."""
        seed = random.randrange(1 << 30)
        print("test_garbage seed", seed)
        rng = random.Random(seed)
        samples = [
            bytes(rng.randrange(256) for _ in range(4096)),
            bytes(rng.randrange(256) for _ in range(100)) + b"\r\n\r\n",
            b"\x00" * 1024,
            b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + bytes(64),
            b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
            b"GET\r\n\r\n",
            b"GET / HTTP/9.9\r\n\r\n",
            b"GET /healthz HTTP/1.1\r\nNoColonHere\r\n\r\n",
            b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: -5\r\n\r\n",
            b"POST /v1/claims HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: abc\r\n\r\n{}",
            b"POST /v1/claims HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n"
            b"zz\r\nnot hex\r\n0\r\n\r\n",
            b"GET /" + b"a" * 70000 + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
            b"GET /healthz HTTP/1.1\r\nX-Big: " + b"h" * 40000 + b"\r\n\r\n",
            b"GET /healthz HTTP/1.1\r\n" + b"X-H: v\r\n" * 5000 + b"\r\n",
            b"\r\n" * 1000,
        ]
        for i in range(20):
            line = bytes(rng.choice(b"GETPOS /v1claims%\x00\xff\r\n:") for _ in range(200))
            samples.append(line + b"\r\n\r\n")
        for data in samples:
            status, reply = self.send_raw(data, deadline_s=3.0)
            self.assertTrue(status is None or 400 <= status < 600 or status == 200,
                            (data[:80], reply[:200]))
            self.assertTrue(self.srv.alive(), "sluiced died on %r:\n%s"
                            % (data[:80], self.srv.stderr()))
        self.assertStillServing()

    def test_chunked_body(self):
        """A chunked body is read like any other (HTTP/1.1 allows it)."""
        body = b'{"holder":"chunk","locks":[{"mutex":"bad/chunk"}]}'
        req = (b"POST /v1/claims HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n"
               + b"%x\r\n" % 10 + body[:10] + b"\r\n" + b"%x\r\n" % (len(body) - 10)
               + body[10:] + b"\r\n0\r\n\r\n")
        status, data = self.send_raw(req)
        self.assertEqual(status, 201, data)
        c = self.srv.get("/v1/claims?holder=chunk").json["claims"]
        self.assertEqual(len(c), 1)
        self.srv.release(c[0]["id"])

    def test_chunked_body_over_limit(self):
        """A chunked body over 64 KiB is 413 too (its length is not announced)."""
        body = b'{"holder":"chunkbig","pad":"' + b"p" * (MAX_BODY + 10) + b'"}'
        chunks = b"".join(b"%x\r\n" % len(body[i:i + 4096]) + body[i:i + 4096] + b"\r\n"
                          for i in range(0, len(body), 4096))
        req = (b"POST /v1/claims HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n"
               + chunks + b"0\r\n\r\n")
        status, data = self.send_raw(req)
        self.assertEqual(status, 413, data[:300])
        self.no_claims_of("chunkbig")


if __name__ == "__main__":
    fx.main()
