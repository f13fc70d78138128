"""The sluice Python client over TLS and mTLS, against a real sluiced (docs/security.md).

A CA, the server's certificate and client certificates are made at test time with the
openssl command (EC P-256 keys: a fraction of a second). One server serves TLS, one also asks
for client certificates (tls.client_ca); each is started once for its class.

What is checked: the server's certificate checked against cafile / $SLUICE_CACERT / an
ssl.SSLContext, the argument before its variable; a server of another CA refused at once with
a TLSError that names the CA file (no failover wait); a client certificate presented
(certfile and keyfile, their variables, or both in one file) and its lack or a stranger's
refused with a TLSError saying so; files that cannot be read, a key without its
certificate, and plain HTTP against TLS either way said in words.
"""
from __future__ import annotations

import os
import shutil
import socket
import ssl
import sys
import tempfile
import threading
import time
import unittest
from contextlib import contextmanager
from typing import Dict, Iterator, List, Optional

import sluice
from test_client import Server, ServerCase

# The certificates are made as the server's TLS tests make theirs (tests/server/certs.py).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..",
                                "tests", "server"))
from certs import make_ca, make_cert  # noqa: E402

FAST_S = 5.0  # a refusal must come well before the failover's retry_for (15 s)


@contextmanager
def environ(**values: Optional[str]) -> Iterator[None]:
    """SLUICE_* variables set (a value) or unset (None) for the block."""
    old = {k: os.environ.get(k) for k in values}
    try:
        for k, v in values.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


NO_TLS_ENV: Dict[str, Optional[str]] = {"SLUICE_CACERT": None, "SLUICE_CERT": None,
                                        "SLUICE_KEY": None}


CERTS = ""  # the directory of the certificates, made once for the module


def setUpModule() -> None:
    global CERTS
    CERTS = tempfile.mkdtemp(prefix="sluice-py-tls-")
    for ca in ("ca", "other"):
        make_ca(CERTS, ca)
    make_cert(CERTS, "srv", "ca")
    make_cert(CERTS, "alice", "ca")
    make_cert(CERTS, "stranger", "other")
    with open(os.path.join(CERTS, "both.pem"), "w", encoding="ascii") as out:
        for part in ("alice.pem", "alice.key"):
            with open(os.path.join(CERTS, part), encoding="ascii") as f:
                out.write(f.read())


def tearDownModule() -> None:
    shutil.rmtree(CERTS, ignore_errors=True)


class TLSCase(ServerCase):
    """One sluiced over TLS (with CLIENT_CA: asking for client certificates) for the class."""

    CLIENT_CA = False

    @classmethod
    def make_server(cls) -> Server:
        args = ["--tls-cert", cls.path("srv.pem"), "--tls-key", cls.path("srv.key")]
        ctx = ssl.create_default_context(cafile=cls.path("ca.pem"))
        if cls.CLIENT_CA:
            args += ["--tls-client-ca", cls.path("ca.pem")]
            ctx.load_cert_chain(cls.path("alice.pem"), cls.path("alice.key"))
        return Server(args, ctx)

    @staticmethod
    def path(name: str) -> str:
        return os.path.join(CERTS, name)

    def setUp(self) -> None:
        self.enterContext(environ(**NO_TLS_ENV))

    def works(self, client: sluice.Client, mutex: str) -> None:
        """A claim made and released over the connection."""
        claim = client.acquire(mutex=mutex, holder="py-tls/" + mutex, lease="5s")
        self.assertEqual(claim.state, "held")
        client.release(claim)
        self.assertEqual(client.get(claim.id).state, "released")

    def refused(self, code: str, cafile: Optional[str] = None, certfile: Optional[str] = None,
                keyfile: Optional[str] = None) -> sluice.TLSError:
        """The TLSError a client with these files gets, at once."""
        start = time.monotonic()
        with self.assertRaises(sluice.TLSError) as cm:
            sluice.Client(self.server.url, cafile=cafile, certfile=certfile,
                          keyfile=keyfile).status()
        self.assertLess(time.monotonic() - start, FAST_S, "a TLS refusal waited for the failover")
        e = cm.exception
        self.assertEqual((e.status, e.code), (None, code), e)
        self.assertIsInstance(e, sluice.SluiceError)
        return e


class TestTLS(TLSCase):
    def test_served_with_the_ca(self) -> None:
        self.assertTrue(self.server.url.startswith("https://"))
        self.works(sluice.Client(self.server.url, cafile=self.path("ca.pem")), "tls-ca")
        # The name in the URL is checked against the certificate: localhost is in it.
        local = self.server.url.replace("127.0.0.1", "localhost")
        self.assertEqual(sluice.Client(local, cafile=self.path("ca.pem")).status()["role"],
                         "leader")

    def test_the_variable_and_the_argument_before_it(self) -> None:
        with environ(SLUICE_CACERT=self.path("ca.pem")):
            self.works(sluice.Client(self.server.url), "tls-env")
        # The argument wins over the variable, either way round.
        with environ(SLUICE_CACERT=self.path("other.pem")):
            self.works(sluice.Client(self.server.url, cafile=self.path("ca.pem")), "tls-arg")
        with environ(SLUICE_CACERT=self.path("ca.pem")):
            e = self.refused("tls_verify", cafile=self.path("other.pem"))
        self.assertIn(self.path("other.pem") + " (from cafile=)", e.message)
        # An empty variable is no variable (the system's CAs then).
        with environ(SLUICE_CACERT=""):
            self.refused("tls_verify")

    def test_an_ssl_context(self) -> None:
        ctx = ssl.create_default_context(cafile=self.path("ca.pem"))
        # The variables do not reach past a context given: this one would refuse.
        with environ(SLUICE_CACERT=self.path("other.pem")):
            self.works(sluice.Client(self.server.url, ssl_context=ctx), "tls-ctx")
        with self.assertRaises(ValueError) as cm:
            sluice.Client(self.server.url, ssl_context=ctx, cafile=self.path("ca.pem"))
        self.assertIn("not both", str(cm.exception))
        other = ssl.create_default_context(cafile=self.path("other.pem"))
        with self.assertRaises(sluice.TLSError) as tls:
            sluice.Client(self.server.url, ssl_context=other).status()
        self.assertIn("the CAs of the ssl_context given", tls.exception.message)

    def test_a_server_of_another_ca_refused(self) -> None:
        e = self.refused("tls_verify", cafile=self.path("other.pem"))
        self.assertIn(f"the certificate of {self.server.url} was not accepted", e.message)
        self.assertIn("give the CA that signed the server's certificate", e.message)
        self.assertIsInstance(e.ssl_error, ssl.SSLCertVerificationError)
        e = self.refused("tls_verify")
        self.assertIn("the system's CAs", e.message)
        self.assertIn("$SLUICE_CACERT", e.message)

    def test_an_event_stream_refused_at_once(self) -> None:
        # follow_events has its own connection loop: it must not retry a refusal either.
        client = sluice.Client(self.server.url, cafile=self.path("other.pem"))
        start = time.monotonic()
        with self.assertRaises(sluice.TLSError):
            next(client.follow_events(since=0))
        self.assertLess(time.monotonic() - start, FAST_S)
        good = sluice.Client(self.server.url, cafile=self.path("ca.pem"))
        start_seq = good.events(since=0)["next"]
        got: List[str] = []
        done = threading.Event()

        def read() -> None:
            for ev in good.follow_events(since=start_seq):
                got.append(str(ev.get("type")))
                done.set()
                return

        t = threading.Thread(target=read, daemon=True)
        t.start()
        self.works(good, "tls-stream")
        self.assertTrue(done.wait(10), "no event over the TLS stream")
        self.assertEqual(got, ["claim.queued"])  # a claim's first event

    def test_files_that_cannot_be_read(self) -> None:
        with self.assertRaises(sluice.TLSError) as cm:
            sluice.Client(self.server.url, cafile=self.path("missing.pem"))
        self.assertEqual(cm.exception.code, "tls_files")
        self.assertIn(f"cannot read the CA file {self.path('missing.pem')} (from cafile=)",
                      cm.exception.message)
        with environ(SLUICE_CERT=self.path("alice.pem"), SLUICE_KEY=self.path("stranger.key")):
            with self.assertRaises(sluice.TLSError) as cm:
                sluice.Client(self.server.url, cafile=self.path("ca.pem"))
        self.assertIn("(from $SLUICE_CERT) with the key", cm.exception.message)
        self.assertIn("key values mismatch", cm.exception.message)
        # A key without its certificate, as the sluice command says it.
        with self.assertRaises(ValueError) as ve:
            sluice.Client(self.server.url, keyfile=self.path("alice.key"))
        self.assertIn("a client key needs its certificate", str(ve.exception))
        # http:// servers leave the files alone: a variable meant for another server.
        with environ(SLUICE_CACERT=self.path("missing.pem")):
            self.assertEqual(sluice.Client("http://127.0.0.1:1").servers, ["http://127.0.0.1:1"])

    def test_plain_http_and_tls_crossed(self) -> None:
        # http:// to the TLS port: closed without an answer, and the message says what to try.
        plain = self.server.url.replace("https://", "http://")
        with self.assertRaises(sluice.Unavailable) as cm:
            sluice.Client(plain, retry_for=0.2).status()
        self.assertIn("use an https:// URL", cm.exception.message)
        # https:// to a server that answers in plain HTTP: said at once.
        listener = socket.create_server(("127.0.0.1", 0))
        self.addCleanup(listener.close)

        def answer_plain() -> None:
            conn, _ = listener.accept()
            with conn:
                conn.recv(4096)
                conn.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")

        threading.Thread(target=answer_plain, daemon=True).start()
        port = listener.getsockname()[1]
        client = sluice.Client(f"https://127.0.0.1:{port}", cafile=self.path("ca.pem"))
        with self.assertRaises(sluice.TLSError) as tls:
            client.status()
        self.assertEqual(tls.exception.code, "tls_protocol")
        self.assertIn("use an http:// URL", tls.exception.message)


class TestMutualTLS(TLSCase):
    CLIENT_CA = True

    def test_the_client_certificate_is_used(self) -> None:
        ca = self.path("ca.pem")
        self.works(sluice.Client(self.server.url, cafile=ca, certfile=self.path("alice.pem"),
                                 keyfile=self.path("alice.key")), "mtls-args")
        # Certificate and key in one file: the key is read from the certificate's file.
        self.works(sluice.Client(self.server.url, cafile=ca, certfile=self.path("both.pem")),
                   "mtls-one-file")
        with environ(SLUICE_CACERT=ca, SLUICE_CERT=self.path("alice.pem"),
                     SLUICE_KEY=self.path("alice.key")):
            client = sluice.Client(self.server.url)
            self.works(client, "mtls-env")
            # hold's keeper thread renews over its own connections.
            with client.hold(mutex="mtls-hold", lease="1s") as claim:
                renewed = claim.raw.get("expires")
                deadline = time.monotonic() + 10
                while client.get(claim.id).raw.get("expires") == renewed:
                    self.assertLess(time.monotonic(), deadline, "no renewal over mTLS")
                    time.sleep(0.05)
                self.assertFalse(claim.lost.is_set())
        ctx = ssl.create_default_context(cafile=ca)
        ctx.load_cert_chain(self.path("alice.pem"), self.path("alice.key"))
        self.works(sluice.Client(self.server.url, ssl_context=ctx), "mtls-ctx")

    def test_no_certificate_refused(self) -> None:
        e = self.refused("tls_refused", cafile=self.path("ca.pem"))
        self.assertIn(f"{self.server.url} refused this client in the TLS handshake", e.message)
        self.assertIn("it asks for a client certificate and none was given", e.message)
        self.assertIn("certfile=", e.message)

    def test_a_certificate_of_another_ca_refused(self) -> None:
        e = self.refused("tls_refused", cafile=self.path("ca.pem"),
                         certfile=self.path("stranger.pem"), keyfile=self.path("stranger.key"))
        self.assertIn("the client certificate is not of a CA it trusts", e.message)
        self.assertIn(self.path("stranger.pem") + " (from certfile=)", e.message)
        self.assertIn("tls.client_ca", e.message)


if __name__ == "__main__":
    unittest.main(verbosity=2)
