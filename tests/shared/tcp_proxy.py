"""tcp_proxy.py - a TCP proxy between one sluiced and PostgreSQL, with faults.

A network partition without root or network tools: the server connects to
the proxy's port, the proxy to PostgreSQL, and the test switches the proxy:

  pass    forward both ways (the default)
  freeze  stop forwarding, keep every socket open: a blackhole. The peers'
          kernels still answer keepalives, as behind a frozen link; new
          connections are accepted and then frozen too
  cut     reset every connection now (RST: SO_LINGER 0); new ones pass
  delay   forward after `ms` milliseconds

One thread accepts, one thread per connection pumps both directions with
select(); the mode is read on every turn, so a switch takes effect within
POLL_S.
"""
import select
import socket
import struct
import threading
import time

POLL_S = 0.01


class _Link:
    def __init__(self, proxy, down, up):
        self.proxy, self.down, self.up = proxy, down, up
        self.closed = False

    def reset(self):
        """Closes both sockets with RST."""
        self.closed = True
        for s in (self.down, self.up):
            try:
                s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                s.close()
            except OSError:
                pass

    def close(self):
        self.closed = True
        for s in (self.down, self.up):
            try:
                s.close()
            except OSError:
                pass

    def pump(self):
        pairs = {self.down: self.up, self.up: self.down}
        try:
            while not self.closed:
                mode, delay_ms = self.proxy.mode, self.proxy.delay_ms
                if mode == "freeze":
                    time.sleep(POLL_S)
                    continue
                readable, _, _ = select.select(list(pairs), [], [], POLL_S)
                for s in readable:
                    if self.proxy.mode == "freeze":
                        break
                    data = s.recv(65536)
                    if not data:
                        self.close()
                        return
                    if delay_ms:
                        time.sleep(delay_ms / 1000.0)
                    pairs[s].sendall(data)
        except OSError:
            self.close()
        finally:
            self.proxy._forget(self)


class TcpProxy:
    """Listens on a free loopback port and forwards to (host, port)."""

    def __init__(self, target_port, target_host="127.0.0.1"):
        self.target = (target_host, target_port)
        self.mode = "pass"
        self.delay_ms = 0
        self.links = set()
        self.lock = threading.Lock()
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.stopping = False
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self):
        while not self.stopping:
            try:
                down, _ = self.sock.accept()
            except OSError:
                return
            try:
                up = socket.create_connection(self.target, timeout=5)
                up.settimeout(None)
            except OSError:
                down.close()
                continue
            link = _Link(self, down, up)
            with self.lock:
                self.links.add(link)
            threading.Thread(target=link.pump, daemon=True).start()

    def _forget(self, link):
        with self.lock:
            self.links.discard(link)

    def set(self, mode, delay_ms=0):
        assert mode in ("pass", "freeze", "cut", "delay"), mode
        if mode == "cut":
            with self.lock:
                links = list(self.links)
            for link in links:
                link.reset()
            self.mode, self.delay_ms = "pass", 0
            return
        self.delay_ms = delay_ms if mode == "delay" else 0
        self.mode = "pass" if mode == "delay" else mode

    def close(self):
        self.stopping = True
        try:
            self.sock.close()
        except OSError:
            pass
        with self.lock:
            links = list(self.links)
        for link in links:
            link.close()
