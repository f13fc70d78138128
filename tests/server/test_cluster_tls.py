"""test_cluster_tls.py - shared mode over TLS (docs/shared-mode.md, "Servers
over TLS"; the security review's F10): two sluiced on one throwaway
PostgreSQL, serving HTTPS with certificates of a cluster CA made at test
time, with tokens and client certificates (tls.client_ca). A follower relays
to the leader over TLS and shows it its certificate; when the leader row
names another address (what anyone with write access to the database can
do), the follower proves it first: a listener with a certificate of another
CA, or a plain-HTTP one, gets no byte of the request (no Authorization
header), and the client gets 503 leader_unverified. Shared mode with tokens
but nothing to prove the leader with refuses to start, unless
--cluster-insecure says so. Every wait is on a state a server reports, with a
deadline.

The leader takes a relayed client's address and certificate from the
follower only because the follower's certificate chains to cluster.ca (here
a CA other than the clients', tls.client_ca): a client that sends those
headers itself is refused, wherever it sends them."""
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
import threading
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pg_fixture import Postgres  # noqa: E402
from sluiced_fixture import SANITIZER_MARKS, binary, free_port, json_call, wait_until  # noqa: E402
from certs import make_ca, make_cert  # noqa: E402

DEADLINE_S = 20
ADMIN = "admin-secret-for-the-cluster-test"
CONFIG = """tokens:
  - {name: admin, token: "%s", admin: true}
""" % ADMIN
# The principals of client certificates, and an audit log per server.
NODE_CONFIG = CONFIG + """  - {name: deployer, certificate: {cn: "%s"}, prefixes: ["deploy/"]}
  - {name: ops, certificate: {cn: ops}, admin: true}
audit:
  path: %s
"""
DEPLOYER_CN = "deployer, ops %2C"  # the forwarded names are percent-encoded, comma-separated
CLIENT_HOST = "127.0.0.2"  # the clients' source address: the servers talk from 127.0.0.1


class Rogue:
    """A listener the test controls, as an attacker's: it records every byte
    it is sent (decrypted, when it speaks TLS) and answers as a leader would."""

    def __init__(self, ctx=None):
        self.ctx = ctx
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.received = b""
        self.connections = 0
        self.lock = threading.Lock()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with self.lock:
                self.connections += 1
            threading.Thread(target=self._one, args=(conn,), daemon=True).start()

    def _one(self, conn):
        conn.settimeout(DEADLINE_S)
        try:
            if self.ctx:
                conn = self.ctx.wrap_socket(conn, server_side=True)
            data = conn.recv(65536)
            with self.lock:
                self.received += data
            body = b'{"owned":"by-rogue"}'
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                         b"Content-Length: %d\r\nConnection: close\r\n\r\n%s" % (len(body), body))
        except (OSError, ssl.SSLError):
            pass  # the follower gave up in the handshake: what it should do
        finally:
            conn.close()

    def close(self):
        self.sock.close()


class Node:
    """One sluiced of the cluster, over HTTPS."""

    def __init__(self, t, name, extra=()):
        self.t, self.name = t, name
        self.port = free_port()
        self.url = "https://127.0.0.1:%d" % self.port
        self.log = os.path.join(t.dir, "%s.log" % name)
        d = t.dir
        self.audit = os.path.join(d, name + ".audit")
        config = os.path.join(d, name + ".yaml")
        with open(config, "w") as f:
            f.write(NODE_CONFIG % (DEPLOYER_CN, self.audit))
        cmd = [binary(), "--listen", "127.0.0.1:%d" % self.port, "--store", t.store,
               "--config", config, "--tls-cert", os.path.join(d, name + ".pem"),
               "--tls-key", os.path.join(d, name + ".key"),
               "--tls-client-ca", os.path.join(d, "clients.pem"),
               "--cluster-ca", os.path.join(d, "cluster.pem"), "--leader-timeout", "2s", *extra]
        with open(self.log, "wb") as err:
            self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=err, stderr=err)

    def text(self):
        with open(self.log, errors="replace") as f:
            return f.read()

    def audit_lines(self):
        try:
            with open(self.audit) as f:
                return [json.loads(line) for line in f]
        except FileNotFoundError:
            return []

    def health(self):
        try:
            r = self.t.request(self.port, "GET", "/healthz")
            return r[1] if r[0] == 200 else None
        except (OSError, http.client.HTTPException, ValueError):
            return None

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
        rc = self.proc.wait(DEADLINE_S)
        text = self.text()
        assert rc == 0, "%s exited %d:\n%s" % (self.name, rc, text)
        for mark in SANITIZER_MARKS:
            assert mark not in text, text


class ClusterTLSTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="sluiced-cluster-tls-")
        d = cls.dir
        make_ca(d, "cluster")
        make_ca(d, "clients")
        make_ca(d, "other")
        for name in ("a", "b", "c"):
            make_cert(d, name, "cluster", "sluiced-" + name, san="IP:127.0.0.1")
        make_cert(d, "client", "clients", "a-client", san="DNS:client.example")
        make_cert(d, "deployer", "clients", DEPLOYER_CN, san="DNS:deploy.example")
        make_cert(d, "rogue", "other", "rogue", san="IP:127.0.0.1")
        cls.config = os.path.join(d, "sluice.yaml")
        with open(cls.config, "w") as f:
            f.write(CONFIG)
        cls.pg = Postgres().start()
        cls.pg.psql("CREATE DATABASE sluice")
        cls.store = cls.pg.url("sluice")
        cls.ctx = cls.client_ctx("client")
        cls.deployer = cls.client_ctx("deployer")
        cls.nodes = []
        try:
            cls.a = cls.start_node("a")
            wait_until(lambda: (cls.a.health() or {}).get("role") == "leader", DEADLINE_S,
                       what="a leading")
            cls.b = cls.start_node("b")
            wait_until(lambda: (cls.b.health() or {}).get("role") == "follower", DEADLINE_S,
                       what="b following")
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def client_ctx(cls, cert):
        ctx = ssl.create_default_context(cafile=os.path.join(cls.dir, "cluster.pem"))
        ctx.load_cert_chain(os.path.join(cls.dir, cert + ".pem"),
                            os.path.join(cls.dir, cert + ".key"))
        return ctx

    @classmethod
    def start_node(cls, name, extra=()):
        n = Node(cls, name, extra)
        cls.nodes.append(n)
        wait_until(lambda: "listening on https://" in n.text() or n.proc.poll() is not None,
                   DEADLINE_S, what="%s listening" % name)
        assert n.proc.poll() is None, n.text()
        return n

    @classmethod
    def tearDownClass(cls):
        try:
            for n in cls.nodes:
                n.stop()
        finally:
            cls.pg.close()
            shutil.rmtree(cls.dir, ignore_errors=True)

    @classmethod
    def request(cls, port, method, path, body=None, token=ADMIN, ctx=None, headers=None):
        conn = http.client.HTTPSConnection("127.0.0.1", port, timeout=DEADLINE_S,
                                           context=ctx or cls.ctx,
                                           source_address=(CLIENT_HOST, 0))
        try:
            status, data = json_call(conn, method, path, body, token, headers)
            return status, json.loads(data) if data.startswith(b"{") else data
        finally:
            conn.close()

    def set_leader_row(self, url):
        """What an attacker with the database's credentials does (F10)."""
        self.pg.psql("UPDATE sluice_leader SET addr = '%s' WHERE id = 1" % url, db="sluice")
        wait_until(lambda: (self.b.health() or {}).get("leader") == url, DEADLINE_S,
                   what="b seeing the leader row name %s" % url)

    def restore_leader_row(self):
        self.set_leader_row(self.a.url)

    def refused(self):
        status, body = self.request(self.b.port, "GET", "/v1/claims")
        self.assertEqual(status, 503, body)
        self.assertEqual(body["error"]["code"], "leader_unverified", body)
        return body["error"]["message"]

    def refused_metric(self):
        status, text = self.request(self.b.port, "GET", "/metrics?server=self")
        self.assertEqual(status, 200)
        for line in text.decode().splitlines():
            if line.startswith("sluice_relay_refused_total "):
                return int(line.split()[1])
        self.fail("no sluice_relay_refused_total in\n%s" % text.decode())

    def test_a_follower_relays_to_the_leader_over_tls(self):
        status, body = self.request(self.b.port, "POST", "/v1/claims",
                                    {"holder": "h", "locks": [{"mutex": "tls-relay"}]})
        self.assertEqual(status, 201, body)
        self.assertEqual(body["state"], "held")
        status, body = self.request(self.b.port, "GET", "/v1/claims/" + body["id"])
        self.assertEqual(status, 200, body)
        self.assertEqual((self.b.health() or {}).get("leader"), self.a.url)
        # The leader checks the client's token, as without TLS.
        status, body = self.request(self.b.port, "GET", "/v1/claims", token="wrong")
        self.assertEqual(status, 401, body)

    def audit_line(self, node, pred, what):
        found = []
        wait_until(lambda: found.extend(x for x in node.audit_lines() if pred(x)) or found,
                   DEADLINE_S, what=what)
        return found[0]

    def test_a_certificate_principal_through_the_follower(self):
        """The client's certificate and address reach the leader through the
        follower: the leader's audit line and the claim's actor name them."""
        status, body = self.request(self.b.port, "POST", "/v1/claims", token=None,
                                    ctx=self.deployer,
                                    body={"holder": "deploy/run-1", "locks": [{"mutex": "deploy/m"}]})
        self.assertEqual(status, 201, body)
        claim = body["id"]
        self.assertEqual(body["actor"], "deployer", body)
        line = self.audit_line(self.a, lambda x: x.get("claim") == claim and x["method"] == "POST",
                               "the leader's audit line of the claim")
        self.assertEqual(line["actor"], "deployer", line)
        self.assertEqual(line["address"], CLIENT_HOST, line)
        self.assertEqual(line["relayed_by"], self.b.url, line)
        status, body = self.request(self.b.port, "GET", "/v1/events?claim=" + claim)
        self.assertEqual(status, 200, body)
        self.assertEqual({e["actor"] for e in body["events"]}, {"deployer"}, body)
        # The leader maps the certificate with its own configuration: one no
        # entry names is refused by the leader, naming it.
        status, body = self.request(self.b.port, "GET", "/v1/claims", token=None)
        self.assertEqual(status, 401, body)
        self.assertIn('CN "a-client"', body["error"]["message"])

    def test_a_client_may_not_forward_an_identity(self):
        """The reproduction: a client names the admin certificate (and another
        address) in the forwarding headers itself, to the leader or to the
        follower. It gets no admin rights: 403, and the audit line has its
        own address."""
        spoof = {"Sluice-Client-Certificate": "ops", "Sluice-Client-Address": "10.9.9.9",
                 "Sluice-Forwarded": self.b.url}
        for node in (self.a, self.b):
            for path in ("/v1/whoami", "/v1/semaphores/spoofed"):
                method = "PUT" if "semaphores" in path else "GET"
                status, body = self.request(node.port, method, path, token=None, headers=spoof,
                                            body={"limit": 1} if method == "PUT" else None)
                self.assertEqual(status, 403, (node.name, path, body))
                self.assertIn("Sluice-Client-Certificate", body["error"]["message"])
        status, body = self.request(self.a.port, "GET", "/v1/semaphores/spoofed")
        self.assertEqual(status, 404, body)
        line = self.audit_line(self.a, lambda x: x["path"] == "/v1/semaphores/spoofed" and
                               x["method"] == "PUT", "the refusal's audit line")
        self.assertEqual((line["status"], line["address"], line["actor"]), (403, CLIENT_HOST, None))
        self.assertEqual(line["relayed_by_unproven"], self.b.url, line)
        self.assertNotIn("relayed_by", line)

    def test_a_follower_the_leader_does_not_take(self):
        """A follower whose cluster.cert the leader's CAs did not sign: the
        leader refuses it in the TLS handshake (after the follower's side of
        it ended, in TLS 1.3), and the client is told at once, not held."""
        d = self.dir
        c = self.start_node("c", ("--cluster-cert", os.path.join(d, "rogue.pem"),
                                  "--cluster-key", os.path.join(d, "rogue.key")))
        self.addCleanup(self.nodes.remove, c)
        self.addCleanup(c.stop)
        wait_until(lambda: (c.health() or {}).get("role") == "follower", DEADLINE_S,
                   what="c following")
        status, body = self.request(c.port, "GET", "/v1/claims")
        self.assertEqual(status, 503, body)
        self.assertEqual(body["error"]["code"], "leader_unverified", body)
        self.assertIn("refused this server's certificate", body["error"]["message"])
        self.assertRegex(c.text(), r" error relay: the leader, https://127\.0\.0\.1:%d, refused "
                                   r"this server's certificate" % self.a.port)

    def test_a_leader_of_another_ca_gets_nothing(self):
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(os.path.join(self.dir, "rogue.pem"),
                            os.path.join(self.dir, "rogue.key"))
        rogue = Rogue(ctx)
        before = self.refused_metric()
        try:
            self.set_leader_row("https://127.0.0.1:%d" % rogue.port)
            message = self.refused()
            self.assertIn("certificate did not verify", message)
            self.assertGreaterEqual(rogue.connections, 1)  # it was tried, and not trusted
        finally:
            self.restore_leader_row()
            rogue.close()
        self.assertNotIn(b"Authorization", rogue.received)
        self.assertNotIn(ADMIN.encode(), rogue.received)
        self.assertEqual(rogue.received, b"")
        self.assertEqual(self.refused_metric(), before + 1)
        self.assertRegex(self.b.text(), r" error relay: the leader named by the database, "
                                        r"https://127\.0\.0\.1:%d, was not proven" % rogue.port)
        status, _ = self.request(self.b.port, "GET", "/v1/claims")
        self.assertEqual(status, 200)

    def test_a_plain_http_leader_gets_nothing(self):
        rogue = Rogue()
        try:
            self.set_leader_row("http://127.0.0.1:%d" % rogue.port)
            self.assertIn("plain http://", self.refused())
            # An https:// URL to a listener that speaks no TLS: the
            # handshake fails, and no request follows it.
            self.set_leader_row("https://127.0.0.1:%d" % rogue.port)
            self.assertIn("TLS handshake failed", self.refused())
        finally:
            self.restore_leader_row()
            rogue.close()
        self.assertEqual(rogue.connections, 1)  # the https:// one: http:// is never tried
        self.assertNotIn(b"Authorization", rogue.received)
        self.assertNotIn(ADMIN.encode(), rogue.received)

    def test_a_reload_may_not_add_tokens_without_cluster_ca(self):
        """A server of the same database without tokens, TLS or cluster.ca
        (it may start: there is no token to take) is refused the first token."""
        conf = os.path.join(self.dir, "plain.yaml")
        with open(conf, "w") as f:
            f.write("log_level: info\n")
        log = os.path.join(self.dir, "plain.log")
        with open(log, "wb") as err:
            proc = subprocess.Popen([binary(), "--listen", "127.0.0.1:%d" % free_port(),
                                     "--store", self.store, "--config", conf],
                                    stdin=subprocess.DEVNULL, stdout=err, stderr=err)

        def text():
            with open(log, errors="replace") as f:
                return f.read()
        try:
            wait_until(lambda: "listening on http://" in text() or proc.poll() is not None,
                       DEADLINE_S, what="the plain server listening")
            self.assertIsNone(proc.poll(), text())
            with open(conf, "w") as f:
                f.write(CONFIG)
            proc.send_signal(signal.SIGHUP)
            wait_until(lambda: "the running configuration is kept" in text(), DEADLINE_S,
                       what="the reload refused")
            self.assertIn("error reload: this server has tokens in shared mode", text())
            self.assertNotIn("read again:", text())
        finally:
            proc.terminate()
            rc = proc.wait(DEADLINE_S)
        self.assertEqual(rc, 0, text())


class StartupTest(unittest.TestCase):
    """Shared mode with tokens and nothing to prove the leader with."""

    def run_sluiced(self, d, *args):
        out = subprocess.run([binary(), "--listen", "127.0.0.1:%d" % free_port(), *args],
                             capture_output=True, text=True, timeout=DEADLINE_S, cwd=d)
        return out.returncode, out.stderr

    def test_tokens_over_plain_http_refuse_to_start(self):
        d = tempfile.mkdtemp(prefix="sluiced-cluster-start-")
        self.addCleanup(shutil.rmtree, d, True)
        conf = os.path.join(d, "sluice.yaml")
        with open(conf, "w") as f:
            f.write(CONFIG)
        # The database is never reached: the check comes first.
        store = "postgres://postgres@127.0.0.1:%d/sluice" % free_port()
        rc, err = self.run_sluiced(d, "--store", store, "--config", conf)
        self.assertEqual(rc, 2, err)
        self.assertIn("has tokens in shared mode", err)
        self.assertIn("cluster.ca", err)
        self.assertIn("--cluster-insecure", err)
        make_ca(d, "ca")
        make_cert(d, "srv", "ca", "srv", san="IP:127.0.0.1")
        tls = ["--tls-cert", os.path.join(d, "srv.pem"), "--tls-key", os.path.join(d, "srv.key")]
        rc, err = self.run_sluiced(d, "--store", store, "--config", conf, *tls)
        self.assertEqual(rc, 2, err)
        self.assertIn("serves TLS in shared mode", err)
        rc, err = self.run_sluiced(d, "--store", store, "--cluster-ca", os.path.join(d, "ca.pem"))
        self.assertEqual(rc, 2, err)
        self.assertIn("cluster.ca: needs TLS on", err)
        rc, err = self.run_sluiced(d, "--store", store, "--advertise", "http://127.0.0.1:1", *tls)
        self.assertEqual(rc, 2, err)
        self.assertIn("advertise", err)
        self.assertIn("write https://", err)


if __name__ == "__main__":
    unittest.main(verbosity=2)
