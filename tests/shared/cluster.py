"""cluster.py - three sluiced on one throwaway PostgreSQL, each behind a TCP
proxy of its own (tcp_proxy.py), a workload of lock clients that check
fencing tokens at a shared resource, and the checks of the committed
history. Used by test_faults.py (the smoke in CTest, the full matrix by
hand); every wait is on a state the servers report, with a deadline.

Cluster(tls=True) runs the servers as a deployment with tokens does
(docs/shared-mode.md, "Servers over TLS"): HTTPS with certificates of a
cluster CA made at start, cluster.ca, an admin token; every request of the
test then goes over TLS with that token.
"""
import http.client
import json
import os
import random
import signal
import ssl
import subprocess
import sys
import threading
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "server"))
from pg_fixture import Postgres  # noqa: E402
from sluiced_fixture import SANITIZER_MARKS, binary, free_port, wait_until  # noqa: E402
from tcp_proxy import TcpProxy  # noqa: E402

END_EVENTS = {"claim.released", "claim.withdrawn", "claim.expired", "claim.timed_out",
              "claim.superseded", "claim.canceled"}


def now():
    return time.monotonic()


# Set by Cluster(tls=True): every request over TLS, with the token.
TLS_CONTEXT = None
TOKEN = "admin-secret-of-the-fault-suite"


def connection(port, timeout):
    if TLS_CONTEXT:
        return http.client.HTTPSConnection("127.0.0.1", port, timeout=timeout,
                                           context=TLS_CONTEXT)
    return http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)


def auth(headers):
    h = dict(headers or {})
    if TLS_CONTEXT:
        h["Authorization"] = "Bearer " + TOKEN
    return h


def make_tls(d, names):
    """A cluster CA and a certificate for IP:127.0.0.1 per name, in d."""
    def openssl(*args):
        subprocess.run(["openssl", *args], cwd=d, check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]
    openssl("req", "-x509", *ec, "-keyout", "cluster-ca.key", "-out", "cluster-ca.pem",
            "-days", "2", "-subj", "/CN=cluster CA")
    with open(os.path.join(d, "san.ext"), "w") as f:
        f.write("subjectAltName=IP:127.0.0.1\n")
    for n in names:
        openssl("req", *ec, "-keyout", n + ".key", "-out", n + ".csr", "-subj", "/CN=" + n)
        openssl("x509", "-req", "-in", n + ".csr", "-CA", "cluster-ca.pem", "-CAkey",
                "cluster-ca.key", "-days", "2", "-out", n + ".pem", "-extfile", "san.ext")
    with open(os.path.join(d, "tokens.yaml"), "w") as f:
        f.write('tokens:\n  - {name: admin, token: "%s", admin: true}\n' % TOKEN)


def request(port, method, path, body=None, headers=None, timeout=15):
    """(status, headers, json or None); raises OSError/HTTPException."""
    conn = connection(port, timeout)
    try:
        h = auth(headers)
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            h["Content-Type"] = "application/json"
        conn.request(method, path, body=data, headers=h)
        r = conn.getresponse()
        raw = r.read()
        try:
            doc = json.loads(raw) if raw else None
        except ValueError:
            doc = None
        return r.status, {k.lower(): v for k, v in r.getheaders()}, doc
    finally:
        conn.close()


class Server:
    """One sluiced, its store reached through its own proxy."""

    def __init__(self, cluster, n):
        self.cluster, self.n = cluster, n
        self.proxy = TcpProxy(cluster.pg.port)
        self.port = free_port()
        self.url = "%s://127.0.0.1:%d" % ("https" if cluster.tls else "http", self.port)
        self.proc = None
        self.runs = 0
        self.stopped = False
        self.advertise = None  # else http:// and the listen address

    def store_url(self):
        return "postgres://postgres@127.0.0.1:%d/sluice" % self.proxy.port

    def log_path(self, run=None):
        return os.path.join(self.cluster.dir, "server%d.%d.log" % (self.n, run or self.runs))

    def start(self):
        self.runs += 1
        cmd = [binary(), "--listen", "127.0.0.1:%d" % self.port, "--store", self.store_url(),
               "--leader-timeout", "%dms" % self.cluster.leader_timeout_ms]
        if self.advertise:
            cmd += ["--advertise", self.advertise]
        if self.cluster.tls:
            d, name = self.cluster.dir, "server%d" % self.n
            cmd += ["--tls-cert", os.path.join(d, name + ".pem"),
                    "--tls-key", os.path.join(d, name + ".key"),
                    "--cluster-ca", os.path.join(d, "cluster-ca.pem"),
                    "--config", os.path.join(d, "tokens.yaml")]
        with open(self.log_path(), "wb") as log:
            self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=log)
        wait_until(lambda: self.health() is not None, 10, what="server %d answering" % self.n)

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def health(self):
        if not self.alive() or self.stopped:
            return None
        try:
            status, _, doc = request(self.port, "GET", "/healthz", timeout=2)
            return doc if status == 200 else None
        except (OSError, http.client.HTTPException):
            return None

    def role(self):
        h = self.health()
        return h.get("role") if h else None

    def signal(self, sig):
        self.proc.send_signal(sig)
        if sig == signal.SIGSTOP:
            self.stopped = True
        elif sig == signal.SIGCONT:
            self.stopped = False

    def kill9(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()
        self.stopped = False

    def terminate(self):
        self.proc.send_signal(signal.SIGTERM)
        rc = self.proc.wait(timeout=30)
        if rc != 0:
            raise AssertionError("server %d exited %d after SIGTERM:\n%s"
                                 % (self.n, rc, self.log()))

    def log(self):
        out = []
        for run in range(1, self.runs + 1):
            try:
                with open(self.log_path(run), errors="replace") as f:
                    out.append("--- server %d run %d ---\n%s" % (self.n, run, f.read()[-60000:]))
            except OSError:
                pass
        return "\n".join(out)

    def sanitizer_report(self):
        for run in range(1, self.runs + 1):
            try:
                with open(self.log_path(run), errors="replace") as f:
                    text = f.read()
            except OSError:
                continue
            for mark in SANITIZER_MARKS:
                if mark in text:
                    return "server %d run %d: %s" % (self.n, run, mark)
        return None


class Cluster:
    def __init__(self, n=3, leader_timeout_ms=2000, fsync=False, tls=False):
        global TLS_CONTEXT
        self.leader_timeout_ms = leader_timeout_ms
        self.tls = tls
        self.pg = Postgres(settings={"fsync": "on" if fsync else "off",
                                     "synchronous_commit": "on"}).start()
        self.dir = self.pg.dir
        if tls:
            make_tls(self.dir, ["server%d" % (i + 1) for i in range(n)])
            TLS_CONTEXT = ssl.create_default_context(
                cafile=os.path.join(self.dir, "cluster-ca.pem"))
        self.pg.psql("CREATE DATABASE sluice")
        self.servers = [Server(self, i + 1) for i in range(n)]
        try:
            for s in self.servers:
                s.start()
            self.wait_leader()
        except Exception:
            self.close()
            raise

    def leader(self):
        for s in self.servers:
            if s.role() == "leader":
                return s
        return None

    def wait_leader(self, deadline_s=15, not_this=None):
        def one():
            lead = self.leader()
            return lead if lead and lead is not not_this else None
        return wait_until(one, deadline_s, poll_s=0.01, what="a leader")

    def followers(self):
        return [s for s in self.servers if s.role() == "follower"]

    def epoch(self):
        """The leader's epoch, 0 while none leads."""
        for s in self.servers:
            h = s.health()
            if h and h.get("role") == "leader":
                return h["epoch"]
        return 0

    def logs(self):
        return "\n".join(s.log() for s in self.servers)

    def close(self):
        for s in self.servers:
            if s.proc is not None and s.proc.poll() is None:
                if s.stopped:
                    s.signal(signal.SIGCONT)
                s.proc.send_signal(signal.SIGTERM)
                try:
                    s.proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    s.proc.kill()
                    s.proc.wait()
            s.proxy.close()
        self.pg.close()


class Resource:
    """What the locks protect: a counter per mutex, written read-modify-write
    by whoever holds the mutex, each write tagged with its fencing token.
    A token below the highest seen is refused (the client was deposed);
    two writers inside at once is a broken mutex (counted, must be 0)."""

    def __init__(self, check_tokens=True):
        self.lock = threading.Lock()
        self.max_token = {}
        self.inside = {}
        self.counter = {}
        self.accepted = 0
        self.refused = 0
        self.overlaps = 0
        self.check_tokens = check_tokens

    def enter(self, mutex, token):
        with self.lock:
            if self.check_tokens and token < self.max_token.get(mutex, 0):
                self.refused += 1
                return False
            self.max_token[mutex] = max(token, self.max_token.get(mutex, 0))
            if self.inside.get(mutex):
                self.overlaps += 1
            self.inside[mutex] = self.inside.get(mutex, 0) + 1
            value = self.counter.get(mutex, 0)
        time.sleep(random.uniform(0, 0.01))
        with self.lock:
            self.counter[mutex] = value + 1
            self.inside[mutex] -= 1
            self.accepted += 1
        return True


class Workload:
    """Lock clients on every server (followers and leader alike), failing
    over between them as a client library does; an event-stream reader.
    Every operation is logged with monotonic times and its outcome."""

    def __init__(self, cluster, workers=6, mutexes=4, lease="5s"):
        self.cluster = cluster
        self.resource = Resource()
        self.mutexes = ["fault/m%d" % i for i in range(mutexes)]
        self.lease = lease
        self.stop_flag = threading.Event()
        self.lock = threading.Lock()
        self.created = {}    # claim id -> mutex, acknowledged creations
        self.released = set()  # claim ids whose release was acknowledged
        self.grants = []     # (claim id, mutex, token, t, epoch)
        self.successes = []  # monotonic times of acknowledged operations
        self.errors = []
        self.abandoned = []  # (claim id or holder, why): a client gave up on it
        self.stream_ids = []
        self.stream_log = []  # (server, Last-Event-ID sent, first id received, epoch)
        self.threads = [threading.Thread(target=self._worker, args=(i,), daemon=True)
                        for i in range(workers)]
        self.threads.append(threading.Thread(target=self._stream, daemon=True))

    def start(self):
        for t in self.threads:
            t.start()
        return self

    def stop(self):
        self.stop_flag.set()
        for t in self.threads:
            t.join(timeout=60)

    def _ok(self, epoch=None):
        with self.lock:
            self.successes.append(now())

    # ---- one client: its servers in a rotating order -------------------

    def _call(self, order, method, path, body=None, headers=None, retry_s=30):
        """The request on the first server that answers it (not 502/503),
        trying the others (connection refused, a hold that ended in 503).
        Returns (status, headers, doc) or None when nobody answered."""
        end = now() + retry_s
        i = 0
        while now() < end and not self.stop_flag.is_set():
            srv = order[i % len(order)]
            i += 1
            if srv.stopped or not srv.alive():
                time.sleep(0.01)
                continue
            try:
                status, hdrs, doc = request(srv.port, method, path, body, headers, timeout=15)
            except (OSError, http.client.HTTPException):
                time.sleep(0.02)
                continue
            if status in (502, 503):
                time.sleep(0.05)
                continue
            return status, hdrs, doc
        return None

    def _worker(self, n):
        rnd = random.Random(n)
        order = list(self.cluster.servers)
        rnd.shuffle(order)
        while not self.stop_flag.is_set():
            self._cycle(n, rnd, order)

    def _cycle(self, n, rnd, order):
        mutex = rnd.choice(self.mutexes)
        key = uuid.uuid4().hex
        # One holder name per cycle: a claim made twice (a retry that was
        # not recognised) shows as two claims of one holder.
        body = {"holder": "w%d/%s" % (n, key[:12]), "locks": [{"mutex": mutex}],
                "lease": self.lease}
        got = self._call(order, "POST", "/v1/claims", body, {"Idempotency-Key": key})
        if not got or got[0] not in (200, 201) or "state" not in (got[2] or {}):
            if got:
                self.errors.append(("create", got[0], got[2]))
            self.abandoned.append((body["holder"], "create", got and got[0]))
            return
        claim = got[2]
        with self.lock:
            self.created[claim["id"]] = mutex
        self._ok()
        while claim["state"] == "pending" and not self.stop_flag.is_set():
            got = self._call(order, "GET", "/v1/claims/%s?wait=5s&seen=pending" % claim["id"])
            if not got or got[0] != 200 or "state" not in (got[2] or {}):
                if got:
                    self.errors.append(("wait", got[0], got[2]))
                self.abandoned.append((claim["id"], "wait", got and got[0]))
                return
            claim = got[2]
            self._ok()
        if claim["state"] not in ("held",):
            return
        token = claim["locks"][0]["token"]
        epoch = int(got[1].get("sluice-epoch", "0"))
        with self.lock:
            self.grants.append((claim["id"], mutex, token, now(), epoch))
        self.resource.enter(mutex, token)
        got = self._call(order, "DELETE", "/v1/claims/%s" % claim["id"])
        if not got or got[0] != 200:
            self.abandoned.append((claim["id"], "release", got and got[0]))
        if got and got[0] == 200:
            with self.lock:
                if got[2]["state"] == "released":
                    self.released.add(claim["id"])
            self._ok()

    # ---- an event-stream reader that resumes on another server ---------

    def _stream(self):
        last = None
        order = list(self.cluster.servers)
        i = 0
        while not self.stop_flag.is_set():
            srv = order[i % len(order)]
            i += 1
            if srv.stopped or not srv.alive():
                time.sleep(0.05)
                continue
            try:
                conn = connection(srv.port, 3)
                headers = {"Last-Event-ID": str(last)} if last is not None else {}
                conn.request("GET", "/v1/events/stream", headers=auth(headers))
                r = conn.getresponse()
                if r.status != 200:
                    conn.close()
                    time.sleep(0.05)
                    continue
                asked, first = last, None
                while not self.stop_flag.is_set():
                    line = r.fp.readline()
                    if not line:
                        break
                    if line.startswith(b"id: "):
                        last = int(line[4:])
                        self.stream_ids.append(last)
                        if first is None:
                            first = last
                            self.stream_log.append((srv.n, asked, first, r.getheader("Sluice-Epoch")))
                conn.close()
            except (OSError, http.client.HTTPException, ValueError):
                time.sleep(0.05)

    # ---- measures ------------------------------------------------------

    def first_grant_after(self, t0, epoch_above=0, before=None):
        with self.lock:
            ts = [t for (_, _, _, t, e) in self.grants
                  if t > t0 and e > epoch_above and (before is None or t < before)]
        return min(ts) - t0 if ts else None

    def successes_after(self, t0):
        with self.lock:
            return sum(1 for t in self.successes if t > t0)

    def longest_gap(self, t_from, t_to):
        with self.lock:
            ts = sorted(t for t in self.successes if t_from <= t <= t_to)
        if not ts:
            return t_to - t_from
        gaps = [b - a for a, b in zip([t_from] + ts, ts + [t_to])]
        return max(gaps)


def read_events(port):
    """The whole event log, from one server (a follower relays it)."""
    events, since = [], 0
    while True:
        status, _, doc = request(port, "GET", "/v1/events?since=%d&limit=10000" % since,
                                 timeout=30)
        if status != 200:
            raise AssertionError("GET /v1/events: %d %r" % (status, doc))
        events += doc["events"]
        if not doc["events"]:
            return events
        since = doc["next"]


def check_history(events, work):
    """The zero-tolerance checks; a list of what is wrong (empty: all well)."""
    problems = []
    seqs = [e["seq"] for e in events]
    for a, b in zip(seqs, seqs[1:]):
        if b != a + 1:
            problems.append("seq gap or duplicate: %d then %d" % (a, b))
            break
    holder = {}
    acquired_at = {}
    for e in events:
        locks = [l for l in (e.get("locks") or []) if l.startswith("mtx/")]
        if e["type"] == "claim.acquired":
            for l in locks:
                if holder.get(l):
                    problems.append("two holders of %s: %s and %s (seq %d)"
                                    % (l, holder[l], e["claim"], e["seq"]))
                holder[l] = e["claim"]
            acquired_at[e["claim"]] = e["seq"]
        elif e["type"] in END_EVENTS:
            for l in locks:
                if holder.get(l) == e["claim"]:
                    holder[l] = None
    queued = {e["claim"] for e in events if e["type"] == "claim.queued"}
    by_holder = {}
    for e in events:
        if e["type"] == "claim.queued":
            by_holder.setdefault(e["holder"], set()).add(e["claim"])
    doubled = [h for h, ids in by_holder.items() if len(ids) > 1]
    if doubled:
        problems.append("%d claims made twice (one holder, two claims), e.g. %s: %s"
                        % (len(doubled), doubled[0], sorted(by_holder[doubled[0]])))
    released = {e["claim"] for e in events if e["type"] == "claim.released"}
    lost = [c for c in work.created if c not in queued]
    if lost:
        problems.append("%d acknowledged claims missing from the log, e.g. %s"
                        % (len(lost), lost[0]))
    lost = [c for c in work.released if c not in released]
    if lost:
        problems.append("%d acknowledged releases missing from the log, e.g. %s"
                        % (len(lost), lost[0]))
    by_mutex = {}
    for (cid, mutex, token, _, _) in work.grants:
        if cid in acquired_at:
            by_mutex.setdefault(mutex, []).append((acquired_at[cid], token, cid))
        else:
            problems.append("a grant the client saw is not in the log: %s" % cid)
    for mutex, grants in by_mutex.items():
        grants.sort()
        for (s1, t1, c1), (s2, t2, c2) in zip(grants, grants[1:]):
            if t2 <= t1:
                problems.append("token went backwards on %s: %d (%s) then %d (%s)"
                                % (mutex, t1, c1, t2, c2))
    ids = work.stream_ids
    for a, b in zip(ids, ids[1:]):
        if b != a + 1:
            problems.append("event stream gap or duplicate: %d then %d (connections: server, "
                            "Last-Event-ID, first id, epoch: %r)"
                            % (a, b, [x for x in work.stream_log if x[1] == a or x[2] == b]))
            break
    if work.resource.overlaps:
        problems.append("%d overlapping critical sections at the resource"
                        % work.resource.overlaps)
    if work.resource.refused:
        problems.append("%d stale tokens refused at the resource" % work.resource.refused)
    return problems
