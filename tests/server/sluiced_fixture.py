"""sluiced_fixture.py - runs a real sluiced for the black-box server tests.

Sluiced picks a free loopback port, makes a temporary directory for the
store (and the YAML configuration, if one is given), starts the server and
waits until GET /healthz answers 200. It offers HTTP helpers (JSON in, JSON
out, raw bytes, raw sockets), kill -9, SIGTERM and restart on the same store.
stop() sends SIGTERM and requires exit status 0: under ASan, LeakSanitizer
turns a leak into a failing status, which is intended. The server's stderr
goes to a file and is printed whenever something fails.

The binary comes from the environment variable SLUICED (CTest sets it), or
from the first command-line argument: python3 test_api.py path/to/sluiced.
"""
import http.client
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_BINARY = os.path.join(HERE, "..", "..", "build", "release", "src", "server", "sluiced")

READY_DEADLINE_S = 10.0
READY_POLL_S = 0.02
STOP_DEADLINE_S = 30.0  # LeakSanitizer's report at exit may take a while
REQUEST_TIMEOUT_S = 30.0
SANITIZER_MARKS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:")


def binary():
    """The sluiced to test: $SLUICED, else the release build in the tree."""
    return os.environ.get("SLUICED") or DEFAULT_BINARY


def main():
    """unittest.main(), taking an optional sluiced path as first argument."""
    if len(sys.argv) > 1 and not sys.argv[1].startswith("-") and os.path.isfile(sys.argv[1]):
        os.environ["SLUICED"] = os.path.abspath(sys.argv.pop(1))
    if not os.path.isfile(binary()):
        sys.stderr.write("sluiced not found at %s; set SLUICED or pass its path\n" % binary())
        sys.exit(2)
    unittest.main(verbosity=2)


def _ephemeral_low():
    """The lowest port the kernel hands to outgoing connections."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def free_port():
    """A loopback port that was free a moment ago, chosen below the kernel's
    ephemeral range. A port from bind(0) comes from that range, which every
    outgoing connection (to PostgreSQL, between servers) draws from too: a
    server restarted on its old port could find it taken by some client's
    socket. Below the range only another test's listener can take it."""
    low = min(_ephemeral_low(), 65536)
    top = max(low - 1, 20000)
    for _ in range(200):
        port = random.randint(10000, top)
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            s.bind(("127.0.0.1", port))
            return port
        except OSError:
            continue
        finally:
            s.close()
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
    finally:
        s.close()


def q(name):
    """A lock name or id for a URL path (keeps '/', which the API accepts)."""
    return urllib.parse.quote(name, safe="/:=*")


class Response:
    """What one request got back."""

    def __init__(self, status, headers, body):
        self.status = status
        self.headers = headers  # lower-cased names
        self.body = body
        self.json = None
        ctype = headers.get("content-type", "")
        if body and ctype.startswith("application/json"):
            try:
                self.json = json.loads(body.decode("utf-8"))
            except ValueError:
                self.json = None

    def __repr__(self):
        return "<%d %s>" % (self.status, self.body[:400].decode("utf-8", "replace"))

    @property
    def error_code(self):
        if isinstance(self.json, dict) and isinstance(self.json.get("error"), dict):
            return self.json["error"].get("code")
        return None


class ServerFailure(AssertionError):
    pass


# Every answer request() and start_request() get is checked against
# docs/openapi.yaml (openapi_check.py) unless SLUICE_OPENAPI_CHECK=0; a
# mismatch raises AssertionError naming the path, the status and what did not
# match. SLUICE_OPENAPI_STATS=1 prints how many answers were checked at exit.
_OPENAPI = None


def _openapi_enabled():
    return os.environ.get("SLUICE_OPENAPI_CHECK", "1") != "0"


def _openapi_check(method, path, status, headers, body, body_read=True, count=True):
    global _OPENAPI
    if not _openapi_enabled():
        return
    if _OPENAPI is None:
        sys.path.insert(0, HERE)
        import openapi_check
        _OPENAPI = openapi_check
        if os.environ.get("SLUICE_OPENAPI_STATS") == "1":
            import atexit
            atexit.register(lambda: sys.stderr.write(
                "openapi_check: %(validated)d answers checked, %(bodies)d JSON bodies "
                "validated\n" % openapi_check.stats))
    before = dict(_OPENAPI.stats)
    _OPENAPI.check(method, path, status, headers, body, body_read=body_read)
    if not count:  # the same answer's body, its status and headers counted already
        _OPENAPI.stats["validated"] = before["validated"]


# SLUICE_TEST_STORE=postgres runs every server of a test process on one
# throwaway PostgreSQL (pg_fixture.py), each on a database of its own.
# SLUICE_TEST_STORE=cluster does the same with three servers per database
# (shared mode): the server a test talks to is a follower, so every request
# of the test is relayed to the leader, one of two peers the fixture keeps
# running beside it; a restart takes the leader down with it, so that the
# state the test reads afterwards came through a failover.
_PG = None
_PG_DBS = 0


def store_kind():
    """"postgres" when the tests run on PostgreSQL, else "sqlite"."""
    mode = os.environ.get("SLUICE_TEST_STORE")
    return "postgres" if mode in ("postgres", "cluster") else "sqlite"


def cluster_mode():
    return os.environ.get("SLUICE_TEST_STORE") == "cluster"


def health(port, timeout=2):
    """GET /healthz's JSON from a port, or None."""
    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
        try:
            conn.request("GET", "/healthz")
            r = conn.getresponse()
            body = r.read()
            return json.loads(body) if r.status == 200 else None
        finally:
            conn.close()
    except (OSError, http.client.HTTPException, ValueError):
        return None


_LIVE_PEERS = []


def _kill_peers():
    """At exit: peers a test did not stop (it stopped only its own server)."""
    for p in _LIVE_PEERS:
        if p.proc is not None and p.proc.poll() is None:
            p.proc.kill()
            p.proc.wait()


def _die_with_parent():
    """A peer must not outlive the test process (a timeout kills it)."""
    import ctypes
    PR_SET_PDEATHSIG = 1
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


class _Peer:
    """Another sluiced on the same database (cluster mode), not talked to by
    the test; it leads, or stands by to."""

    def __init__(self, owner, n):
        self.owner, self.n = owner, n
        self.proc = None
        self.port = None
        self.runs = 0
        self.stderr_path = None

    def start(self):
        """Starts the peer and waits until it says it listens. Another process
        may take the port between free_port() and the bind (tests run in
        parallel): then the peer exits at once and starts again elsewhere."""
        if not _LIVE_PEERS:
            import atexit
            atexit.register(_kill_peers)
        if self not in _LIVE_PEERS:
            _LIVE_PEERS.append(self)
        for attempt in range(5):
            self.port = free_port()
            self.runs += 1
            self.stderr_path = os.path.join(self.owner.dir, "peer%d.%d.log" % (self.n, self.runs))
            cmd = self.owner._command(self.port)
            with open(self.stderr_path, "wb") as err:
                self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=err,
                                             stderr=err, preexec_fn=_die_with_parent)
            wait_until(lambda: not self.alive() or " listening on http://" in self.stderr(),
                       READY_DEADLINE_S, what="peer %d listening" % self.n)
            if self.alive():
                return
            rc = self.proc.wait()
            self.proc = None
            if "cannot listen" not in self.stderr() or attempt == 4:
                raise ServerFailure("peer sluiced exited with status %d before it listened:\n%s"
                                    % (rc, self.stderr()))

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def role(self):
        h = health(self.port) if self.alive() else None
        return h.get("role") if h else None

    def stop(self, hard=False):
        proc, self.proc = self.proc, None
        if proc is None:
            return
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL if hard else signal.SIGTERM)
        try:
            rc = proc.wait(timeout=STOP_DEADLINE_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            raise ServerFailure("peer sluiced did not stop within %.0f s" % STOP_DEADLINE_S)
        if not hard and rc != 0:
            raise ServerFailure("peer sluiced exited with status %d:\n%s" % (rc, self.stderr()))
        err = self.stderr()
        for mark in SANITIZER_MARKS:
            if mark in err:
                raise ServerFailure("peer sluiced reported %r:\n%s" % (mark, err))

    def stderr(self):
        if not self.stderr_path or not os.path.exists(self.stderr_path):
            return ""
        with open(self.stderr_path, "rb") as f:
            return f.read().decode("utf-8", "replace")


def _postgres_db():
    """A new, empty database on the test process's PostgreSQL: its name."""
    global _PG, _PG_DBS
    if _PG is None:
        import atexit
        from pg_fixture import Postgres
        _PG = Postgres().start()
        atexit.register(_PG.close)
    _PG_DBS += 1
    name = "sluice_%d" % _PG_DBS
    _PG.psql("CREATE DATABASE %s" % name)
    return name


class Sluiced:
    """One sluiced process (and its successors after restarts) on one store."""

    def __init__(self, config=None, args=(), token=None, durability=None, log_level="info"):
        self.binary = binary()
        self.dir = tempfile.mkdtemp(prefix="sluiced-test-")
        self.fault_path = os.path.join(self.dir, "commit-fault")  # _commit_fault
        self.store = os.path.join(self.dir, "sluice.db")
        self.store_kind = store_kind()
        self.pg_db = _postgres_db() if self.store_kind == "postgres" else None
        self.store_url = _PG.url(self.pg_db) if self.pg_db else "sqlite:" + self.store
        self.config_path = None
        if config is not None:
            self.config_path = os.path.join(self.dir, "sluice.yaml")
            with open(self.config_path, "w") as f:
                f.write(config)
        self.args = list(args)
        self.durability = durability
        self.log_level = log_level
        self.token = token  # sent as a bearer token unless a request says otherwise
        self.proc = None
        self.port = None
        self.runs = 0
        self.stderr_path = None
        self.cluster = cluster_mode()
        self.peers = [_Peer(self, 1), _Peer(self, 2)] if self.cluster else []
        self.start()

    # ---- the store, from the side ------------------------------------------

    def store_sql(self, sql):
        """Runs sql on the server's store from another connection (autocommit)."""
        if self.pg_db:
            return _PG.psql(sql, db=self.pg_db)
        import sqlite3
        db = sqlite3.connect(self.store, isolation_level=None, timeout=10)
        try:
            db.executescript(sql)
        finally:
            db.close()
        return ""

    def block_commits(self, name, message="injected failure"):
        """Every commit of the store fails with message until unblock_commits:
        a trigger on PostgreSQL's log table; with SQLite, whose commits append
        to its log file (docs/store.md), the test-only fault file the server
        reads before each append (SLUICE_TEST_COMMIT_FAULT, set by start)."""
        if self.pg_db:
            self.store_sql("CREATE FUNCTION %s_fn() RETURNS trigger LANGUAGE plpgsql AS $$ "
                           "BEGIN RAISE EXCEPTION '%s'; END $$; CREATE TRIGGER %s BEFORE "
                           "INSERT ON log FOR EACH ROW EXECUTE FUNCTION %s_fn()"
                           % (name, message, name, name))
        else:
            self._commit_fault("fail " + message)

    def unblock_commits(self, name):
        if self.pg_db:
            self.store_sql("DROP TRIGGER %s ON log; DROP FUNCTION %s_fn()" % (name, name))
        else:
            self._commit_fault(None)

    def _commit_fault(self, what):
        """Writes (None: removes) the fault file: atomically, by rename."""
        if what is None:
            os.unlink(self.fault_path)
            return
        with open(self.fault_path + ".new", "w") as f:
            f.write(what + "\n")
        os.replace(self.fault_path + ".new", self.fault_path)

    def hold_commits(self):
        """A context manager: while inside, the store's commits wait (PostgreSQL:
        its log table is locked by another connection; SQLite: the fault file
        says "hold" and the append polls it); reads go on."""
        return _CommitHold(self)

    # ---- life ----------------------------------------------------------

    def _command(self, port=None):
        cmd = [self.binary, "--listen", "127.0.0.1:%d" % (port or self.port),
               "--store", self.store_url, "--log-level", self.log_level]
        if self.config_path:
            cmd += ["--config", self.config_path]
        if self.durability:
            cmd += ["--durability", self.durability]
        if self.store_kind == "postgres":
            # Tokens in shared mode over plain HTTP: loopback, the test's own
            # database (docs/shared-mode.md, "Servers over TLS").
            cmd += ["--cluster-insecure"]
        return cmd + self.args

    def _start_peers(self):
        """Cluster mode: the peers run, and one of them leads."""
        for p in self.peers:
            if not p.alive():
                p.start()
        wait_until(lambda: any(p.role() == "leader" for p in self.peers), READY_DEADLINE_S,
                   what="a peer leading")

    def leader_peer(self):
        for p in self.peers:
            if p.role() == "leader":
                return p
        return None

    def start(self):
        """Starts the server and waits for /healthz (a new port each time)."""
        assert self.proc is None, "already running"
        if self.cluster:
            self._start_peers()
        for attempt in range(5):
            self.port = free_port()
            self.runs += 1
            self.stderr_path = os.path.join(self.dir, "stderr.%d.log" % self.runs)
            env = dict(os.environ, SLUICE_TEST_COMMIT_FAULT=self.fault_path)
            with open(self.stderr_path, "wb") as err:
                self.proc = subprocess.Popen(self._command(), stdin=subprocess.DEVNULL,
                                             stdout=err, stderr=err, env=env)
            if self._wait_ready():
                if self.cluster:
                    wait_until(lambda: (health(self.port) or {}).get("role") == "follower",
                               READY_DEADLINE_S, what="the tested server following")
                return
            # Exited before it was ready: another process took the port between
            # free_port() and the bind, or a real failure (reported below).
            rc = self.proc.wait()
            self.proc = None
            if "cannot listen" not in self.stderr() or attempt == 4:
                raise ServerFailure("sluiced exited with status %d before it was ready:\n%s"
                                    % (rc, self.stderr()))

    def _wait_ready(self):
        deadline = time.monotonic() + READY_DEADLINE_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                return False
            try:
                if self.request("GET", "/healthz", timeout=2).status == 200:
                    return True
            except (OSError, http.client.HTTPException):
                pass
            time.sleep(READY_POLL_S)
        self.proc.kill()
        self.proc.wait()
        self.proc = None
        raise ServerFailure("sluiced did not answer /healthz within %.0f s:\n%s"
                            % (READY_DEADLINE_S, self.stderr()))

    def stderr(self):
        """The current (or last) run's stderr."""
        if not self.stderr_path or not os.path.exists(self.stderr_path):
            return ""
        with open(self.stderr_path, "rb") as f:
            return f.read().decode("utf-8", "replace")

    def all_stderr(self):
        out = []
        for i in range(1, self.runs + 1):
            p = os.path.join(self.dir, "stderr.%d.log" % i)
            if os.path.exists(p):
                with open(p, "rb") as f:
                    out.append("---- run %d ----\n%s" % (i, f.read().decode("utf-8", "replace")))
        for p in self.peers:
            out.append("---- peer %d (run %d) ----\n%s" % (p.n, p.runs, p.stderr()))
        return "\n".join(out)

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def check_sanitizers(self):
        """Fails if the run's stderr holds an ASan/UBSan/LSan report."""
        err = self.stderr()
        for mark in SANITIZER_MARKS:
            if mark in err:
                raise ServerFailure("sluiced reported %r:\n%s" % (mark, err))

    def kill9(self):
        """kill -9: no chance to commit or clean up. Fails if the server had
        already died by itself (a crash the test must not take for the kill)."""
        assert self.proc is not None
        proc = self.proc
        self.proc = None
        died = proc.poll()
        if died is None:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
        self.check_sanitizers()
        if died is not None:
            raise ServerFailure("sluiced had exited with status %d before the kill:\n%s"
                                % (died, self.stderr()))

    def terminate(self):
        """SIGTERM, then require exit status 0 (ASan leaks make it fail)."""
        assert self.proc is not None
        proc = self.proc
        self.proc = None
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        try:
            rc = proc.wait(timeout=STOP_DEADLINE_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            raise ServerFailure("sluiced did not stop within %.0f s of SIGTERM:\n%s"
                                % (STOP_DEADLINE_S, self.stderr()))
        if rc != 0:
            raise ServerFailure("sluiced exited with status %d after SIGTERM:\n%s"
                                % (rc, self.stderr()))
        self.check_sanitizers()

    def restart(self, hard=False):
        """Stops (kill -9 when hard, else SIGTERM) and starts again on the same store.
        In cluster mode the leader goes down too: a peer takes over."""
        if self.cluster:
            lead = self.leader_peer()
            if lead:
                lead.stop(hard)
        if hard:
            self.kill9()
        else:
            self.terminate()
        self.start()

    def stop(self):
        """Stops the server (exit status checked) and removes the directory."""
        try:
            if self.proc is not None:
                self.terminate()
            for p in self.peers:
                p.stop()
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)

    def dump_stderr(self, why=""):
        sys.stderr.write("\n==== sluiced stderr %s====\n%s\n==== end ====\n"
                         % (why + " " if why else "", self.all_stderr()))

    # ---- requests ------------------------------------------------------

    def connect(self, timeout=REQUEST_TIMEOUT_S):
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)

    def _headers(self, headers, token):
        h = {}
        tok = self.token if token is None else token
        if tok:
            h["Authorization"] = "Bearer " + tok
        if headers:
            h.update(headers)
        return h

    def request(self, method, path, body=None, headers=None, raw=None, token=None,
                timeout=REQUEST_TIMEOUT_S):
        """One request on a fresh connection. body is sent as JSON, raw as
        bytes; token "" sends no Authorization. Returns a Response."""
        conn = self.connect(timeout)
        try:
            h = self._headers(headers, token)
            data = raw
            if body is not None:
                data = json.dumps(body).encode("utf-8")
                h.setdefault("Content-Type", "application/json")
            conn.request(method, path, body=data, headers=h)
            r = conn.getresponse()
            payload = r.read()
            got = Response(r.status, {k.lower(): v for k, v in r.getheaders()}, payload)
            _openapi_check(method, path, got.status, got.headers, payload)
            return got
        finally:
            conn.close()

    def start_request(self, method, path, body=None, headers=None, token=None,
                      timeout=REQUEST_TIMEOUT_S):
        """Sends a request and returns (conn, response) once the status line
        and headers are in, body unread: a long poll has started then."""
        conn = self.connect(timeout)
        h = self._headers(headers, token)
        data = None
        if body is not None:
            data = json.dumps(body).encode("utf-8")
            h["Content-Type"] = "application/json"
        conn.request(method, path, body=data, headers=h)
        resp = conn.getresponse()
        if _openapi_enabled():
            # Status, headers and content type now; a JSON body once it is
            # read whole (resp.read()), as the long polls' tests do.
            hdrs = {k.lower(): v for k, v in resp.getheaders()}
            _openapi_check(method, path, resp.status, hdrs, None, body_read=False)
            read = resp.read

            def read_checked(amt=None):
                data = read(amt)
                if amt is None:
                    _openapi_check(method, path, resp.status, hdrs, data, count=False)
                return data
            resp.read = read_checked
        return conn, resp

    def get(self, path, **kw):
        return self.request("GET", path, **kw)

    def post(self, path, body=None, **kw):
        return self.request("POST", path, body=body, **kw)

    def put(self, path, body=None, **kw):
        return self.request("PUT", path, body=body, **kw)

    def delete(self, path, **kw):
        return self.request("DELETE", path, **kw)

    def raw_socket(self, timeout=10.0):
        s = socket.create_connection(("127.0.0.1", self.port), timeout=timeout)
        return s

    # ---- API shortcuts ---------------------------------------------------

    def claim(self, holder, locks=(), expect=201, **fields):
        """POST /v1/claims; locks as ("m", name) / ("s", name, slots) or dicts."""
        body = {"holder": holder}
        if locks:
            body["locks"] = [lock_json(l) for l in locks]
        body.update(fields)
        r = self.post("/v1/claims", body)
        if expect is not None and r.status != expect:
            raise AssertionError("POST /v1/claims %s: expected %d, got %r"
                                 % (json.dumps(body), expect, r))
        return r.json

    def claim_get(self, cid, query="", expect=200):
        r = self.get("/v1/claims/%s%s" % (cid, query))
        if expect is not None and r.status != expect:
            raise AssertionError("GET claim %s: expected %d, got %r" % (cid, expect, r))
        return r.json

    def release(self, cid, expect=200):
        r = self.delete("/v1/claims/%s" % cid)
        if expect is not None and r.status != expect:
            raise AssertionError("DELETE claim %s: expected %d, got %r" % (cid, expect, r))
        return r.json

    def sem_put(self, name, limit, expect=200, **fields):
        body = {"limit": limit}
        body.update(fields)
        r = self.put("/v1/semaphores/%s" % q(name), body)
        if expect is not None and r.status != expect:
            raise AssertionError("PUT semaphore %s: expected %d, got %r" % (name, expect, r))
        return r.json

    def events(self, since=0, **params):
        params["since"] = since
        r = self.get("/v1/events?" + urllib.parse.urlencode(params))
        if r.status != 200:
            raise AssertionError("GET /v1/events: %r" % r)
        return r.json

    def all_events(self, since=0):
        """Every event after since, paging through the log."""
        out = []
        while True:
            page = self.events(since, limit=10000)
            if not page["events"]:
                return out
            out.extend(page["events"])
            since = page["next"]

    def healthy(self):
        r = self.get("/healthz", token="")
        return r.status == 200 and r.json and r.json.get("status") == "ok"


class _CommitHold:
    def __init__(self, srv):
        self.srv = srv

    def __enter__(self):
        if self.srv.pg_db:
            self.psql = subprocess.Popen(
                [os.path.join(_PG.bin, "psql"), "-X", "-q", "-At", "-h", "127.0.0.1",
                 "-p", str(_PG.port), "-U", "postgres", "-d", self.srv.pg_db],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
            self.psql.stdin.write("BEGIN; LOCK TABLE log IN EXCLUSIVE MODE; SELECT 'locked';\n")
            self.psql.stdin.flush()
            if self.psql.stdout.readline().strip() != "locked":
                raise AssertionError("could not lock the store's log")
        else:
            self.srv._commit_fault("hold")
        return self

    def __exit__(self, *exc):
        if self.srv.pg_db:
            self.psql.communicate("ROLLBACK;\n", timeout=30)
        else:
            self.srv._commit_fault(None)


def lock_json(l):
    if isinstance(l, dict):
        return l
    if l[0] == "m":
        return {"mutex": l[1]}
    d = {"semaphore": l[1]}
    if len(l) > 2:
        d["slots"] = l[2]
    return d


def json_call(conn, method, path, body=None, token=None, headers=None):
    """One request on an http.client connection (HTTPS ones of the TLS
    tests, with their own contexts): body as JSON, token as Bearer, more
    headers; (status, the answer's bytes)."""
    headers = dict(headers or {})
    if token:
        headers["Authorization"] = "Bearer " + token
    if body is not None:
        headers["Content-Type"] = "application/json"
        body = json.dumps(body)
    conn.request(method, path, body=body, headers=headers)
    r = conn.getresponse()
    return r.status, r.read()


def wait_until(fn, deadline_s, poll_s=0.02, what="condition"):
    """Polls fn() until it returns something true, at most deadline_s.
    Returns that value; raises AssertionError naming what when time runs out."""
    end = time.monotonic() + deadline_s
    last = None
    while True:
        last = fn()
        if last:
            return last
        if time.monotonic() >= end:
            raise AssertionError("%s not reached within %.1f s (last: %r)"
                                 % (what, deadline_s, last))
        time.sleep(poll_s)


class ServerTestCase(unittest.TestCase):
    """A test case with one server for the whole class (CONFIG, TOKEN), a
    clean SIGTERM stop at the end, and the server's stderr printed when a
    test of the class fails."""

    CONFIG = None
    TOKEN = None
    ARGS = ()

    @classmethod
    def setUpClass(cls):
        cls.srv = Sluiced(config=cls.CONFIG, token=cls.TOKEN, args=cls.ARGS)
        cls._failed = False

    @classmethod
    def tearDownClass(cls):
        try:
            cls.srv.stop()
        except ServerFailure:
            cls.srv.dump_stderr("at stop")
            raise
        if cls._failed:
            cls.srv.dump_stderr("after a failure")

    def run(self, result=None):
        result = result if result is not None else self.defaultTestResult()
        before = len(result.failures) + len(result.errors)
        out = super().run(result)
        if len(result.failures) + len(result.errors) > before:
            type(self)._failed = True
        return out

    # ---- assertions shared by the test files --------------------------

    def assertError(self, r, status, code=None, contains=None):
        """An API error: status, JSON {"error": {"code", "message"}}."""
        self.assertEqual(r.status, status, r)
        self.assertIsInstance(r.json, dict, "error body is not JSON: %r" % r)
        err = r.json.get("error")
        self.assertIsInstance(err, dict, r)
        self.assertIsInstance(err.get("message"), str, r)
        self.assertTrue(err["message"], r)
        if code is not None:
            self.assertEqual(err.get("code"), code, r)
        if contains is not None:
            self.assertIn(contains, err["message"], r)

    def assertStillServing(self):
        """/healthz 200 and a fresh claim on a fresh mutex is held at once."""
        self.assertTrue(self.srv.healthy(), "healthz not ok:\n" + self.srv.stderr())
        name = "alive/%d" % time.monotonic_ns()
        c = self.srv.claim("alive", [("m", name)])
        self.assertEqual(c["state"], "held")
        self.assertEqual(self.srv.release(c["id"])["state"], "released")
