"""test_tls.py - sluiced over TLS (docs/security.md, "TLS"): TLS 1.2 and 1.3
served, 1.0 and 1.1 refused, ALPN http/1.1, keep-alive and pipelining (in
one record, and in a record per request read ahead together),
client certificates checked against tls.client_ca (a wrong CA, an expired
certificate or none refused), certificates read again on SIGHUP (a
connection opened before goes on, a new one sees the new certificate, a bad
file keeps the one in use), and a client stuck in its handshake holds no one
else up. Client certificates as principals: a token entry that names a
certificate (CN, DNS or URI) admits the certificate's holder with the
entry's rights and no Authorization header; a certificate no entry names is
401, a bearer token wins over the certificate, a reload that removes the
entry ends its access (new requests and parked ones), and such a client may
take the connection slots kept for clients that authenticate. The CA,
server and client certificates are made at test time with the openssl
command. Every wait is on a state the server reports (its log, or
an answer), with a deadline."""
import http.client
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from certs import make_ca, make_cert  # noqa: E402
from sluiced_fixture import binary, free_port, json_call, wait_until  # noqa: E402

DEADLINE_S = 20


class Server:
    """sluiced with TLS flags; ready when its log says it listens on https."""

    def __init__(self, d, args):
        self.port = free_port()
        self.log = os.path.join(d, "stderr.%d.log" % self.port)
        with open(self.log, "wb") as err:
            self.proc = subprocess.Popen(
                [binary(), "--listen", "127.0.0.1:%d" % self.port,
                 "--store", "sqlite:" + os.path.join(d, "s%d.db" % self.port), *args],
                stdin=subprocess.DEVNULL, stdout=err, stderr=err)
        wait_until(lambda: "listening on https://" in self.text() or self.proc.poll() is not None,
                   DEADLINE_S, what="sluiced listening on https")
        assert self.proc.poll() is None, self.text()

    def text(self):
        with open(self.log, errors="replace") as f:
            return f.read()

    def stop(self):
        self.proc.terminate()
        rc = self.proc.wait(DEADLINE_S)
        # A clean stop (under ASan: no leak, no error at exit).
        assert rc == 0 and "Sanitizer" not in self.text(), "exit %d:\n%s" % (rc, self.text())


class TLSTestCase(unittest.TestCase):
    CLIENT_CA = False
    PLAIN = False  # a plain listener on loopback beside TLS (plain_listen)
    CONFIG = None

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="sluiced-tls-")
        d = cls.dir
        make_ca(d, "ca")
        make_ca(d, "other")
        make_cert(d, "srv", "ca", "server-one")
        make_cert(d, "srv2", "ca", "server-two")
        make_cert(d, "alice", "ca", "alice", san="DNS:alice.example,URI:spiffe://x/alice")
        make_cert(d, "stranger", "other", "stranger")
        make_cert(d, "expired", "ca", "old", days="-1")
        make_cert(d, "bob", "ca", "bob", san="DNS:bob.example")
        make_cert(d, "carol", "ca", "someone", san="DNS:carol.example,URI:spiffe://x/carol")
        shutil.copy(os.path.join(d, "srv.pem"), os.path.join(d, "live.pem"))
        shutil.copy(os.path.join(d, "srv.key"), os.path.join(d, "live.key"))
        args = ["--tls-cert", os.path.join(d, "live.pem"), "--tls-key", os.path.join(d, "live.key")]
        if cls.CLIENT_CA:
            args += ["--tls-client-ca", os.path.join(d, "ca.pem")]
        if cls.PLAIN:
            cls.plain_port = free_port()
            args += ["--plain-listen", "127.0.0.1:%d" % cls.plain_port]
        if cls.CONFIG:
            cls.config = os.path.join(d, "sluiced.yaml")
            with open(cls.config, "w") as f:
                f.write(cls.CONFIG)
            args += ["--config", cls.config]
        cls.srv = Server(d, args)

    @classmethod
    def tearDownClass(cls):
        cls.srv.stop()
        shutil.rmtree(cls.dir, ignore_errors=True)

    def path(self, name):
        return os.path.join(self.dir, name)

    def context(self, version=None, cert=None):
        ctx = ssl.create_default_context(cafile=self.path("ca.pem"))
        ctx.set_alpn_protocols(["h2", "http/1.1"])
        if version:
            ctx.minimum_version = ctx.maximum_version = version
        if cert:
            ctx.load_cert_chain(self.path(cert + ".pem"), self.path(cert + ".key"))
        return ctx

    def connect(self, ctx):
        raw = socket.create_connection(("127.0.0.1", self.srv.port), timeout=DEADLINE_S)
        return ctx.wrap_socket(raw, server_hostname="localhost")

    def read_answers(self, s, n):
        """n answers to GET /healthz (keep-alive: each has a Content-Length)."""
        data, out = b"", []
        while len(out) < n:
            head_end = data.find(b"\r\n\r\n")
            if head_end >= 0:
                head = data[:head_end].decode()
                length = int([h.split(":", 1)[1] for h in head.split("\r\n")
                              if h.lower().startswith("content-length:")][0])
                if len(data) >= head_end + 4 + length:
                    out.append(head.split("\r\n")[0])
                    data = data[head_end + 4 + length:]
                    continue
            chunk = s.recv(65536)
            self.assertTrue(chunk, "the server closed the connection; answers so far %r" % out)
            data += chunk
        return out

    def check_resumption(self, cert=None):
        # TLS 1.3 tickets and the TLS 1.2 session cache: a second connection
        # offering the first one's session resumes it (no full handshake).
        for version in (ssl.TLSVersion.TLSv1_3, ssl.TLSVersion.TLSv1_2):
            ctx = self.context(version, cert)
            with self.connect(ctx) as s:
                self.assertEqual(self.get(s), ["HTTP/1.1 200 OK"])  # the ticket came with it
                session = s.session
                self.assertFalse(s.session_reused)
            raw = socket.create_connection(("127.0.0.1", self.srv.port), timeout=DEADLINE_S)
            with ctx.wrap_socket(raw, server_hostname="localhost", session=session) as s:
                self.assertEqual(self.get(s), ["HTTP/1.1 200 OK"])
                self.assertTrue(s.session_reused, version)

    def get(self, s, n=1):
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n" * n)
        return self.read_answers(s, n)


class TestTLS(TLSTestCase):
    def test_tls12_and_tls13_served_with_alpn(self):
        for v in (ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3):
            with self.connect(self.context(v)) as s:
                self.assertEqual(s.version(), {ssl.TLSVersion.TLSv1_2: "TLSv1.2",
                                               ssl.TLSVersion.TLSv1_3: "TLSv1.3"}[v])
                self.assertEqual(s.selected_alpn_protocol(), "http/1.1")
                self.assertEqual(self.get(s), ["HTTP/1.1 200 OK"])

    def test_tls10_and_tls11_refused(self):
        for v in (ssl.TLSVersion.TLSv1, ssl.TLSVersion.TLSv1_1):
            ctx = self.context(v)
            ctx.set_ciphers("DEFAULT:@SECLEVEL=0")  # this client would speak it
            with self.assertRaises(ssl.SSLError) as e:
                self.connect(ctx)
            self.assertIn("PROTOCOL_VERSION", str(e.exception).upper())

    def test_plain_http_to_the_tls_port_gets_no_answer(self):
        with socket.create_connection(("127.0.0.1", self.srv.port), timeout=DEADLINE_S) as s:
            s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            got = b""
            try:
                while True:
                    chunk = s.recv(4096)
                    if not chunk:
                        break
                    got += chunk
            except ConnectionResetError:
                pass  # closed with the request unread
            self.assertNotIn(b"HTTP/1.1 200", got)

    def test_sessions_resume(self):
        self.check_resumption()

    def test_keep_alive_and_pipelining(self):
        with self.connect(self.context()) as s:
            self.assertEqual(self.get(s), ["HTTP/1.1 200 OK"])
            self.assertEqual(self.get(s, 20), ["HTTP/1.1 200 OK"] * 20)
            self.assertEqual(self.get(s), ["HTTP/1.1 200 OK"])

    def test_pipelined_requests_each_in_its_own_record(self):
        # 30 requests, a TLS record each, reaching the server in one TCP
        # segment (corked): one recv reads them all ahead, and the records
        # OpenSSL holds beyond the first are read without a socket event.
        with self.connect(self.context()) as s:
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CORK, 1)
            for _ in range(30):
                s.sendall(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CORK, 0)
            self.assertEqual(self.read_answers(s, 30), ["HTTP/1.1 200 OK"] * 30)

    def test_curl_over_tls(self):
        if not shutil.which("curl"):
            self.skipTest("no curl")
        out = subprocess.run(
            ["curl", "-sS", "--cacert", self.path("ca.pem"), "--tlsv1.2",
             "https://localhost:%d/healthz" % self.srv.port,
             "--resolve", "localhost:%d:127.0.0.1" % self.srv.port],
            capture_output=True, text=True, timeout=DEADLINE_S)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn('"status"', out.stdout)

    def test_a_stuck_handshake_holds_no_one_up(self):
        # One client sends half a ClientHello and nothing more.
        stuck = socket.create_connection(("127.0.0.1", self.srv.port), timeout=DEADLINE_S)
        stuck.sendall(b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03")
        try:
            start = time.monotonic()
            with self.connect(self.context()) as s:
                self.assertEqual(self.get(s), ["HTTP/1.1 200 OK"])
            self.assertLess(time.monotonic() - start, 5)
        finally:
            stuck.close()

    def test_sighup_rotates_the_certificate(self):
        old = self.connect(self.context())
        try:
            self.assertEqual(self.get(old), ["HTTP/1.1 200 OK"])
            self.assertIn("server-one", str(old.getpeercert()["subject"]))
            shutil.copy(self.path("srv2.pem"), self.path("live.pem"))
            shutil.copy(self.path("srv2.key"), self.path("live.key"))
            before = self.srv.text().count("read again")
            self.srv.proc.send_signal(signal.SIGHUP)
            wait_until(lambda: self.srv.text().count("read again") > before, DEADLINE_S,
                       what="the reload logged")
            with self.connect(self.context()) as s:
                self.assertIn("server-two", str(s.getpeercert()["subject"]))
                self.assertEqual(self.get(s), ["HTTP/1.1 200 OK"])
            # The connection opened before goes on, with its certificate.
            self.assertEqual(self.get(old, 2), ["HTTP/1.1 200 OK"] * 2)
            # A bad file: the certificate in use stays, and the log says why.
            with open(self.path("live.pem"), "w") as f:
                f.write("not a certificate\n")
            self.srv.proc.send_signal(signal.SIGHUP)
            wait_until(lambda: "the certificate in use is kept" in self.srv.text(), DEADLINE_S,
                       what="the bad certificate logged")
            self.assertIn("cannot read the certificate file", self.srv.text())
            with self.connect(self.context()) as s:
                self.assertIn("server-two", str(s.getpeercert()["subject"]))
                self.assertEqual(self.get(s), ["HTTP/1.1 200 OK"])
        finally:
            old.close()
            shutil.copy(self.path("srv2.pem"), self.path("live.pem"))


class TestClientCertificates(TLSTestCase):
    CLIENT_CA = True

    def refused(self, cert):
        with self.assertRaises((ssl.SSLError, ConnectionError, OSError)):
            with self.connect(self.context(cert=cert)) as s:
                # TLS 1.3: the server's refusal comes after the client's Finished.
                self.get(s)

    def test_a_certificate_of_the_ca_is_served(self):
        for v in (ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3):
            with self.connect(self.context(v, cert="alice")) as s:
                self.assertEqual(self.get(s, 2), ["HTTP/1.1 200 OK"] * 2)

    def test_the_cli_over_mtls(self):
        cli = os.environ.get("SLUICE_CLI")
        if not cli:
            self.skipTest("SLUICE_CLI not set (CTest sets it)")
        url = "https://localhost:%d" % self.srv.port
        env = dict(os.environ, SLUICE_CACERT=self.path("ca.pem"))
        env.pop("SLUICE_CERT", None)
        env.pop("SLUICE_KEY", None)

        def sluice(*args, **kw):
            return subprocess.run([cli, "--server", url, *args], capture_output=True, text=True,
                                  timeout=DEADLINE_S, env=dict(env, **kw))

        # Flags: --cacert, --cert, --key.
        ok = sluice("--cacert", self.path("ca.pem"), "--cert", self.path("alice.pem"),
                    "--key", self.path("alice.key"), "sem", "set", "tls/db", "2")
        self.assertEqual(ok.returncode, 0, ok.stderr)
        # The variables.
        ok = sluice("sem", "info", "tls/db", SLUICE_CERT=self.path("alice.pem"),
                    SLUICE_KEY=self.path("alice.key"))
        self.assertEqual(ok.returncode, 0, ok.stderr)
        self.assertIn("tls/db", ok.stdout)
        # No client certificate: refused in the handshake, and said.
        bad = sluice("sem", "info", "tls/db")
        self.assertNotEqual(bad.returncode, 0)
        self.assertNotEqual(bad.stderr.strip(), "")
        # A key without its certificate: refused before connecting.
        bad = sluice("--key", self.path("alice.key"), "sem", "info", "tls/db")
        self.assertNotEqual(bad.returncode, 0)
        self.assertIn("needs its certificate", bad.stderr)

    def test_the_cli_says_what_tls_refused(self):
        # A TLS refusal is not a server out of reach: sluice says which certificate and
        # what to give, and run gives up at once (it used to retry it for
        # SLUICE_CLAIM_TIMEOUT, 10 minutes, asking whether sluiced was running).
        cli = os.environ.get("SLUICE_CLI")
        if not cli:
            self.skipTest("SLUICE_CLI not set (CTest sets it)")
        url = "https://localhost:%d" % self.srv.port
        env = {k: v for k, v in os.environ.items() if not k.startswith("SLUICE_")}

        def sluice(*args):
            return subprocess.run([cli, "--server", url, *args], capture_output=True, text=True,
                                  timeout=DEADLINE_S, env=env)

        alice = ("--cert", self.path("alice.pem"), "--key", self.path("alice.key"))
        out = sluice("--cacert", self.path("other.pem"), *alice, "run", "--mutex", "m", "--", "true")
        self.assertEqual(out.returncode, 122, out.stderr)
        self.assertIn("the certificate of %s was not accepted" % url, out.stderr)
        self.assertIn("checked against the CA file %s" % self.path("other.pem"), out.stderr)
        self.assertNotIn("running", out.stderr)
        out = sluice("--cacert", self.path("ca.pem"), "sem", "list")
        self.assertEqual(out.returncode, 3, out.stderr)
        self.assertIn("it asks for a client certificate; give one of its tls.client_ca with "
                      "--cert and --key", out.stderr)
        self.assertNotIn("running", out.stderr)
        out = sluice("--cacert", self.path("ca.pem"), "--cert", self.path("stranger.pem"),
                     "--key", self.path("stranger.key"), "sem", "list")
        self.assertEqual(out.returncode, 3, out.stderr)
        self.assertIn("refused this client's certificate %s" % self.path("stranger.pem"), out.stderr)
        out = sluice("--cacert", self.path("ca.pem"), "--cert", self.path("alice.pem"),
                     "--key", self.path("stranger.key"), "sem", "list")
        self.assertEqual(out.returncode, 3, out.stderr)
        self.assertIn("cannot use the client certificate", out.stderr)
        out = sluice("--cacert", self.path("ca.pem"), *alice, "run", "--mutex", "m", "--", "true")
        self.assertEqual(out.returncode, 0, out.stderr)

    def test_sessions_of_a_verified_client_resume(self):
        self.check_resumption("alice")

    def test_no_certificate_refused(self):
        self.refused(None)

    def test_another_ca_refused(self):
        self.refused("stranger")

    def test_an_expired_certificate_refused(self):
        self.refused("expired")

    def test_the_refusal_reaches_the_client(self):
        # TLS 1.3: the server refuses a client's certificate (here, none) after the
        # client's Finished, when the client has sent its request already. The alert
        # must reach the client, so that it can say why: a close with the request
        # unread sends a reset, and a reset drops the alert on its way (the client
        # saw an end of file, most times).
        for _ in range(20):
            with self.assertRaises(ssl.SSLError) as e:
                with self.connect(self.context(ssl.TLSVersion.TLSv1_3)) as s:
                    self.get(s)
            self.assertEqual(e.exception.reason, "TLSV13_ALERT_CERTIFICATE_REQUIRED")


class TestPlainListener(TLSTestCase):
    """plain_listen: beside TLS, plain HTTP on loopback for local health checks."""
    CLIENT_CA = True
    PLAIN = True

    def test_plain_beside_tls(self):
        with socket.create_connection(("127.0.0.1", self.plain_port), timeout=DEADLINE_S) as s:
            self.assertEqual(self.get(s, 2), ["HTTP/1.1 200 OK"] * 2)
            # The rest of the API asks for TLS (and here a client certificate).
            s.sendall(b"GET /v1/claims HTTP/1.1\r\nHost: localhost\r\n\r\n")
            self.assertEqual(self.read_answers(s, 1), ["HTTP/1.1 403 Forbidden"])
        # The TLS listener still asks for TLS and a client certificate.
        with self.connect(self.context(cert="alice")) as s:
            self.assertEqual(self.get(s), ["HTTP/1.1 200 OK"])
        self.assertIn("plain HTTP also on http://127.0.0.1:%d" % self.plain_port,
                      self.srv.text())

    def test_off_loopback_refused(self):
        r = subprocess.run([binary(), "--listen", "127.0.0.1:%d" % free_port(),
                            "--plain-listen", "0.0.0.0:%d" % free_port(),
                            "--store", "sqlite:" + self.path("refused.db")],
                           capture_output=True, text=True, timeout=DEADLINE_S)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("plain_listen", r.stderr)
        self.assertIn("is not a loopback address", r.stderr)


ADMIN = "adm-secret-0123456789"
PRINCIPALS = """
tokens:
  - name: admin
    token: "%s"
    admin: true
  - name: alice
    certificate: {cn: alice}
    prefixes: ["team-a/"]
  - name: carol
    certificate: {uri: "spiffe://x/carol"}
    prefixes: ["team-c/"]
limits:
  max_connections: 10
  max_connections_per_client: 0
""" % ADMIN


class TestCertificatePrincipals(TLSTestCase):
    CLIENT_CA = True
    CONFIG = PRINCIPALS

    def tearDown(self):
        self.reload_to(PRINCIPALS)

    def conn(self, cert):
        return http.client.HTTPSConnection("localhost", self.srv.port, timeout=DEADLINE_S,
                                           context=self.context(cert=cert))

    def call(self, conn, method, path, body=None, token=None):
        status, data = json_call(conn, method, path, body, token)
        return status, json.loads(data) if data else None

    def request(self, cert, method, path, body=None, token=None):
        c = self.conn(cert)
        try:
            return self.call(c, method, path, body, token)
        finally:
            c.close()

    def claim(self, cert, holder, lock, token=None):
        return self.request(cert, "POST", "/v1/claims",
                            {"holder": holder, "locks": [{"mutex": lock}]}, token)

    def reload_to(self, text):
        with open(self.config, "w") as f:
            f.write(text)
        before = self.srv.text().count(" read again: ")
        self.srv.proc.send_signal(signal.SIGHUP)
        wait_until(lambda: self.srv.text().count(" read again: ") > before, DEADLINE_S,
                   what="the reload logged")

    def test_a_certificate_principal_claims_under_its_prefixes(self):
        st, mine = self.claim("alice", "team-a/run/1", "team-a/db")
        self.assertEqual(st, 201, mine)
        self.assertEqual(self.request("alice", "GET", "/v1/claims/" + mine["id"])[0], 200)
        # Outside its prefixes: a lock route is 403, another tenant's claim 404.
        st, body = self.claim("alice", "team-a/run/1", "team-b/db")
        self.assertEqual((st, body["error"]["code"]), (403, "forbidden"), body)
        self.assertEqual(self.request("alice", "GET", "/v1/mutexes/team-b/db")[0], 403)
        st, theirs = self.claim("alice", "team-b/x", "team-b/db", token=ADMIN)
        self.assertEqual(st, 201, theirs)
        st, body = self.request("alice", "GET", "/v1/claims/" + theirs["id"])
        self.assertEqual((st, body["error"]["code"]), (404, "not_found"), body)
        for c in (mine, theirs):
            self.assertEqual(self.request("alice", "DELETE", "/v1/claims/" + c["id"],
                                          token=ADMIN)[0], 200)

    def test_a_uri_san_names_a_principal(self):
        # carol's CN names no entry; its URI SAN does.
        st, c = self.claim("carol", "team-c/x", "team-c/m")
        self.assertEqual(st, 201, c)
        self.assertEqual(self.claim("carol", "team-a/x", "team-a/m")[0], 403)
        self.assertEqual(self.request("carol", "DELETE", "/v1/claims/" + c["id"])[0], 200)

    def test_an_unmatched_certificate_gets_401(self):
        st, body = self.request("bob", "GET", "/v1/claims")
        self.assertEqual((st, body["error"]["code"]), (401, "unauthorized"), body)
        self.assertIn('CN "bob"', body["error"]["message"])
        # Admitted as a connection: /healthz needs nothing.
        self.assertEqual(self.request("bob", "GET", "/healthz")[0], 200)
        # With a token it is that token's.
        self.assertEqual(self.request("bob", "GET", "/v1/claims", token=ADMIN)[0], 200)

    def test_the_token_wins_over_the_certificate(self):
        st, body = self.request("alice", "GET", "/v1/claims", token="not-a-known-secret")
        self.assertEqual((st, body["error"]["code"]), (401, "unauthorized"), body)
        # alice's certificate with the admin token is the admin.
        st, c = self.claim("alice", "team-b/y", "team-b/y", token=ADMIN)
        self.assertEqual(st, 201, c)
        self.assertEqual(self.request("alice", "DELETE", "/v1/claims/" + c["id"],
                                      token=ADMIN)[0], 200)

    def test_a_reload_that_removes_the_entry_ends_its_access(self):
        kept = self.conn("alice")
        poll = self.conn("alice")
        try:
            self.assertEqual(self.call(kept, "GET", "/v1/claims")[0], 200)
            seq = self.request("alice", "GET", "/v1/events?since=0&limit=10000",
                               token=ADMIN)[1]["next"]
            poll.request("GET", "/v1/events?since=%d&wait=20s" % seq)
            parked = poll.getresponse()
            self.assertEqual(parked.status, 200)  # the status line leaves at once
            self.reload_to(PRINCIPALS.replace("  - name: alice\n    certificate: {cn: alice}\n"
                                              "    prefixes: [\"team-a/\"]\n", ""))
            # The parked long poll is cut, the kept-alive connection's next
            # request is refused, and so is a new connection's.
            with self.assertRaises((http.client.IncompleteRead, ConnectionError)):
                parked.read()
            self.assertEqual(self.call(kept, "GET", "/v1/claims")[0], 401)
            self.assertEqual(self.request("alice", "GET", "/v1/claims")[0], 401)
        finally:
            kept.close()
            poll.close()

    def test_a_certificate_principal_may_take_a_kept_slot(self):
        """With tokens, the last tenth of max_connections (1 of 10) is kept
        for clients that authenticate: a certificate principal does."""
        held = []
        try:
            # 9 connections past their handshake and idle fill the open slots.
            for _ in range(9):
                s = self.connect(self.context(cert="bob"))
                held.append(s)
                self.assertEqual(self.get(s), ["HTTP/1.1 200 OK"])
            with self.connect(self.context(cert="bob")) as s:
                s.sendall(b"GET /v1/status HTTP/1.1\r\nHost: localhost\r\n\r\n")
                got = b""
                try:
                    # Until the server closes it: then its slot is free.
                    for chunk in iter(lambda: s.recv(65536), b""):
                        got += chunk
                except (ssl.SSLError, ConnectionError):
                    pass
                self.assertTrue(got.startswith(b"HTTP/1.1 503"), got)
            st, body = self.request("alice", "GET", "/v1/status")
            self.assertEqual(st, 200, body)
        finally:
            for s in held:
                s.close()


if __name__ == "__main__":
    unittest.main()
