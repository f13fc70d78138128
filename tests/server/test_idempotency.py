#!/usr/bin/env python3
"""test_idempotency.py - POST /v1/claims with an Idempotency-Key.

A retry with the same key (and token) answers the claim the first request
made, in its current state, marked Idempotent-Replayed; the same key with
another body is 409; keys of different tokens never meet; the key survives
a kill -9 (the crash between a commit and its answer that the header is
for); a retry after its creator hung up (and its claim was withdrawn) makes
a new claim; a malformed key is 400.
"""
import json
import os
import sys
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sluiced_fixture as fx  # noqa: E402
from sluiced_fixture import ServerTestCase, wait_until  # noqa: E402
from test_client_gone import hard_close, read_head  # noqa: E402


def post(srv, body, key, token=None, **kw):
    return srv.post("/v1/claims", body, headers={"Idempotency-Key": key}, token=token, **kw)


class TestIdempotency(ServerTestCase):
    def test_retry_answers_the_first_claim(self):
        key = str(uuid.uuid4())
        body = {"holder": "idem", "locks": [{"mutex": "idem/m"}], "lease": "30s"}
        first = post(self.srv, body, key)
        self.assertEqual(first.status, 201, first)
        self.assertNotIn("idempotent-replayed", first.headers)
        again = post(self.srv, dict(body, wait="1s"), key)  # a retry may wait less or more
        self.assertEqual(again.status, 201, again)
        self.assertEqual(again.json["id"], first.json["id"])
        self.assertEqual(again.headers["location"], "/v1/claims/" + first.json["id"])
        self.assertEqual(again.headers.get("idempotent-replayed"), "true")
        # In its current state: released, then retried, still the same claim.
        self.srv.release(first.json["id"])
        third = post(self.srv, body, key)
        self.assertEqual((third.json["id"], third.json["state"]),
                         (first.json["id"], "released"))
        self.assertEqual(len(self.srv.get("/v1/claims?holder=idem").json["claims"]), 1)
        # The same key with another request is refused, naming the claim.
        other = post(self.srv, dict(body, priority=5), key)
        self.assertError(other, 409, "conflict", first.json["id"])
        # Without a key every request makes a claim.
        a = self.srv.claim("nokey", [("m", "idem/n")])
        b = self.srv.claim("nokey", [("m", "idem/n")])
        self.assertNotEqual(a["id"], b["id"])
        for c in (a, b):
            self.srv.release(c["id"])

    def test_malformed_keys(self):
        body = {"holder": "x", "locks": [{"mutex": "idem/bad"}]}
        for key in ("", "k" * 129, "tab\there"):
            r = post(self.srv, body, key)
            self.assertError(r, 400, "bad_request", "Idempotency-Key")
        self.assertEqual(self.srv.get("/v1/claims?holder=x").json["claims"], [])

    def test_key_survives_a_crash(self):
        key = str(uuid.uuid4())
        body = {"holder": "crash", "locks": [{"mutex": "idem/crash"}], "lease": "1m"}
        first = post(self.srv, body, key)
        self.srv.restart(hard=True)
        again = post(self.srv, body, key)
        self.assertEqual(again.json["id"], first.json["id"])
        self.assertEqual(again.headers.get("idempotent-replayed"), "true")
        self.assertEqual(again.json["state"], "held")
        self.srv.release(first.json["id"])

    def test_retry_after_the_creator_hung_up_makes_a_new_claim(self):
        """A creator that hangs up mid-wait is taken for dead: its claim is
        withdrawn at once, key or no key (a dead client's place in the queue
        must not wait for its lease). A retry with the key, whose connection
        had merely broken, is then not told that its claim is gone: it gets a
        new claim, which holds when the lock is free."""
        m = "idem/back"
        h = self.srv.claim("h", [("m", m)])
        key = str(uuid.uuid4())
        body = {"holder": "back", "locks": [{"mutex": m}], "lease": "30s", "wait": "20s"}
        s = self.srv.raw_socket()
        data = json.dumps(body).encode()
        s.sendall(b"POST /v1/claims HTTP/1.1\r\nHost: 127.0.0.1\r\nIdempotency-Key: %s\r\n"
                  b"Content-Length: %d\r\n\r\n" % (key.encode(), len(data)) + data)
        status, headers = read_head(s)
        self.assertEqual(status, 201)
        first = headers["location"].split("/")[-1]
        hard_close(s)
        wait_until(lambda: self.srv.claim_get(first)["state"] == "withdrawn", 5.0,
                   what="the hung-up creator's claim withdrawn")
        conn, resp = self.srv.start_request("POST", "/v1/claims", body=body,
                                            headers={"Idempotency-Key": key})
        self.assertEqual(resp.status, 201)
        self.assertIsNone(resp.headers.get("Idempotent-Replayed"))
        self.srv.release(h["id"])
        got = json.loads(resp.read())
        conn.close()
        self.assertNotEqual(got["id"], first)
        self.assertEqual(got["state"], "held")
        # From now on the key is the new claim's, across a restart too.
        self.srv.restart(hard=True)
        again = post(self.srv, body, key)
        self.assertEqual(again.json["id"], got["id"])
        self.srv.release(got["id"])


class TestIdempotencyTokens(ServerTestCase):
    CONFIG = """
tokens:
  - name: one
    token: "one-secret-0123456789"
    prefixes: ["shared/"]
  - name: two
    token: "two-secret-0123456789"
    prefixes: ["shared/"]
"""
    TOKEN = "one-secret-0123456789"

    def test_keys_are_per_token(self):
        body = {"holder": "shared/x", "locks": [{"mutex": "shared/m"}], "lease": "10s"}
        a = post(self.srv, body, "same-key", token="one-secret-0123456789")
        b = post(self.srv, body, "same-key", token="two-secret-0123456789")
        self.assertEqual((a.status, b.status), (201, 201))
        self.assertNotEqual(a.json["id"], b.json["id"])
        self.assertEqual(b.json["state"], "pending")
        self.assertEqual(post(self.srv, body, "same-key", token="two-secret-0123456789").json["id"],
                         b.json["id"])
        for c in (b, a):
            self.srv.release(c.json["id"])
        wait_until(lambda: self.srv.claim_get(b.json["id"])["state"] != "pending", 2.0,
                   what="b withdrawn")


if __name__ == "__main__":
    fx.main()
