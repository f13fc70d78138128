"""test_cluster_script.py - scripts/cluster as a newcomer runs it: three
servers on a throwaway PostgreSQL, their URLs printed, one leading; kill -9
of the leader shows another taking over; a stop (SIGTERM: the script traps
it as it traps Ctrl-C's SIGINT, which a shell ignores in a job started in
the background, as CI's may be) stops everything and removes the
temporary directory. With --tls the servers answer over HTTPS with the CA
it prints, and a follower relays to the leader over TLS.
"""
import http.client
import json
import os
import re
import signal
import socket
import ssl
import subprocess
import sys
import threading
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
sys.path.insert(0, os.path.join(HERE, "..", "server"))
from sluiced_fixture import health, wait_until  # noqa: E402


def free_base():
    """A port p with p, p+1 and p+2 free a moment ago. Probed with
    SO_REUSEADDR, as sluiced and PostgreSQL bind: a port that only has
    connections in TIME_WAIT (many, while a benchmark opens connections
    next to the tests) is free for them."""
    for _ in range(200):
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", 0))
        base = s.getsockname()[1]
        s.close()
        ok = True
        for p in (base + 1, base + 2):
            t = socket.socket()
            t.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                t.bind(("127.0.0.1", p))
            except OSError:
                ok = False
            finally:
                t.close()
        if ok and base + 2 < 65536:
            return base
    raise AssertionError("no three free ports in a row")


def epochs_shown(out):
    """The leaders' epochs in the script's lines of roles so far."""
    return [int(e) for line in out for e in re.findall(r"leader \(epoch (\d+)\)", line)]


class TestClusterScript(unittest.TestCase):
    def start(self, *args):
        """scripts/cluster on three free ports; again (twice at most) when it
        exits before it is ready: a port it chose for a server or for
        PostgreSQL was taken between the choice and the start by one of the
        tests that run beside this one. Its output says why."""
        for attempt in range(3):
            base = free_base()
            env = dict(os.environ, SLUICE_CLUSTER_PORT=str(base))
            proc = subprocess.Popen([os.path.join(ROOT, "scripts", "cluster"), *args], env=env,
                                    stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                    stderr=subprocess.STDOUT, text=True)
            out = []
            reader = threading.Thread(target=lambda: out.extend(proc.stdout), daemon=True)
            reader.start()
            wait_until(lambda: any("Who leads" in line for line in out) or
                       proc.poll() is not None, 300, what="scripts/cluster ready or exited")
            if proc.poll() is None:
                return base, proc, out, reader
            reader.join(10)
            if attempt == 2:
                raise AssertionError("scripts/cluster exited %d:\n%s" % (proc.returncode,
                                                                          "".join(out)))
            sys.stderr.write("scripts/cluster exited %d before it was ready, again:\n%s"
                             % (proc.returncode, "".join(out)))

    def test_three_servers_a_takeover_and_a_clean_stop(self):
        base, proc, out, reader = self.start()
        try:
            text = "".join(out)
            pids = [int(p) for p in re.findall(r"pid (\d+)", text)]
            self.assertEqual(len(pids), 3, text)
            self.assertIn("export SLUICE_SERVER=http://127.0.0.1:%d," % base, text)
            ports = [base, base + 1, base + 2]
            roles = wait_until(lambda: sorted((health(p) or {}).get("role", "?") for p in ports)
                               == ["follower", "follower", "leader"] and True, 20,
                               what="one leader, two followers")
            self.assertTrue(roles)
            # The script's first line of roles (it comes after its heading).
            shown = wait_until(lambda: epochs_shown(out), 20, what="the script showing a leader")
            lead = [p for p in ports if health(p)["role"] == "leader"][0]
            os.kill(pids[ports.index(lead)], signal.SIGKILL)
            wait_until(lambda: any((health(p) or {}).get("role") == "leader"
                                   for p in ports if p != lead), 10, what="a takeover")
            wait_until(lambda: max(epochs_shown(out) or [0]) > max(shown), 20,
                       what="the script showing the new leader")
            tmp = re.search(r"logs in (\S+)\)", text).group(1)
        finally:
            proc.send_signal(signal.SIGTERM)
            rc = proc.wait(timeout=60)
            reader.join(10)
        self.assertEqual(rc, 0, "".join(out))
        self.assertFalse(os.path.exists(tmp), "the temporary directory is left behind")
        for p in ports:
            self.assertIsNone(health(p), "a server still answers after the stop")

    def test_over_tls(self):
        base, proc, out, reader = self.start("--tls")
        try:
            text = "".join(out)
            self.assertIn("export SLUICE_SERVER=https://127.0.0.1:%d," % base, text)
            ca = re.search(r"export SLUICE_CACERT=(\S+)", text).group(1)
            ctx = ssl.create_default_context(cafile=ca)

            def get(port, path):
                conn = http.client.HTTPSConnection("127.0.0.1", port, timeout=10, context=ctx)
                try:
                    conn.request("GET", path)
                    r = conn.getresponse()
                    return r.status, json.loads(r.read())
                except (OSError, http.client.HTTPException, ValueError):
                    return None, None
                finally:
                    conn.close()

            ports = [base, base + 1, base + 2]
            wait_until(lambda: sorted((get(p, "/healthz")[1] or {}).get("role", "?")
                                      for p in ports) == ["follower", "follower", "leader"],
                       20, what="one leader, two followers, over HTTPS")
            follower = [p for p in ports if get(p, "/healthz")[1]["role"] == "follower"][0]
            status, doc = get(follower, "/v1/status")  # relayed to the leader over TLS
            self.assertEqual(status, 200, doc)
        finally:
            proc.send_signal(signal.SIGTERM)
            rc = proc.wait(timeout=60)
            reader.join(10)
        self.assertEqual(rc, 0, "".join(out))


if __name__ == "__main__":
    unittest.main(verbosity=2)
