"""test_faults.py - shared mode under faults: three sluiced on one
PostgreSQL, lock clients on all of them, and one fault after another while
they work; then the zero-tolerance checks of the committed history.

  python3 test_faults.py             the smoke (CTest): each fault once, T = 2 s
  python3 test_faults.py --full [N]  the matrix: each fault N times (default 5),
                                     at random moments, and a table of timings
  python3 test_faults.py --flap [S]  S seconds (default 60) of a random server
                                     killed or stopped every 1-3 s

Faults: kill -9, SIGTERM and SIGSTOP (below and above T) of the leader; the
leader's PostgreSQL link frozen (a blackhole) and cut (reset); kill -9 of a
follower; PostgreSQL restarted as after a crash. After each, the cluster
must lead again and the clients make progress (waited on, with deadlines);
at the end nothing acknowledged is missing from the log, no mutex had two
holders, no token went backwards, seq has no gap, the event stream read
across every failover has no gap, and the resource saw no overlap and no
stale token. Timings (fault to first grant under the new leader, the
longest time any client went without an answer) are printed.

SLUICED names the binary (CTest sets it). SLUICE_FAULTS_TLS=1 runs the
same with the servers over TLS, proving each other with a cluster CA, and
an admin token on every request (shared/faults_smoke_tls).
"""
import os
import random
import signal
import statistics
import sys
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from cluster import Cluster, Workload, check_history, now, read_events  # noqa: E402
from sluiced_fixture import wait_until  # noqa: E402

T_MS = 2000
PROGRESS_DEADLINE_S = 30


def progress(work, t0, n=5):
    wait_until(lambda: work.successes_after(t0) >= n, PROGRESS_DEADLINE_S, poll_s=0.02,
               what="clients making progress")


def fault_end_leader(how):
    """kill -9 (how "kill") or SIGTERM of the leader; restarted as a follower."""
    def fault(c, work):
        lead = c.leader()
        epoch = c.epoch()
        t0 = now()
        lead.kill9() if how == "kill" else lead.terminate()
        c.wait_leader(not_this=lead)
        progress(work, t0)
        lead.start()
        return t0, epoch
    return fault


def fault_stop_leader(factor):
    def fault(c, work):
        lead = c.leader()
        epoch = c.epoch()
        t0 = now()
        lead.signal(signal.SIGSTOP)
        time.sleep(factor * T_MS / 1000.0)  # the fault's length, not a wait for state
        lead.signal(signal.SIGCONT)
        if factor > 1:
            # Deposed while stopped: it must not lead under its old epoch.
            wait_until(lambda: lead.role() != "leader" or c.epoch() > epoch, 10,
                       what="the stopped leader deposed")
        progress(work, t0)
        return t0, epoch if factor > 1 else None
    return fault


def fault_freeze_link(c, work):
    lead = c.leader()
    epoch = c.epoch()
    t0 = now()
    lead.proxy.set("freeze")
    wait_until(lambda: any(s.role() == "leader" for s in c.servers if s is not lead), 20,
               poll_s=0.02, what="a new leader while the old one's link is frozen")
    progress(work, t0)
    lead.proxy.set("pass")
    return t0, epoch


def fault_freeze_follower_link(c, work):
    """A follower cut off from the database: it must not lead, and its
    clients go on (its relays reach the leader over HTTP)."""
    f = c.followers()[0]
    t0 = now()
    f.proxy.set("freeze")
    time.sleep(2 * T_MS / 1000.0)  # the fault's length
    if f.role() == "leader":
        raise AssertionError("a follower cut off from the database took the lead")
    progress(work, t0)
    f.proxy.set("pass")
    return t0, None


def fault_cut_link(c, work):
    lead = c.leader()
    epoch = c.epoch()
    t0 = now()
    lead.proxy.set("cut")
    wait_until(lambda: c.epoch() > epoch, 20, poll_s=0.02, what="a new epoch after the cut")
    progress(work, t0)
    return t0, epoch


def fault_kill_follower(c, work):
    f = c.followers()[0]
    t0 = now()
    f.kill9()
    progress(work, t0)
    f.start()
    return t0, None


# Seconds of a fault spent outside sluice, by fault: PostgreSQL's own crash
# recovery and start, which a loaded machine stretches (9 s once under a load
# of 17 on two cores) and no server can shorten. The smoke bound leaves it out.
OUTSIDE_S = {}


def fault_pg_restart(c, work):
    epoch = c.epoch()
    t0 = now()
    c.pg.restart("immediate")
    OUTSIDE_S.setdefault("PostgreSQL restart (immediate)", []).append(now() - t0)
    wait_until(lambda: c.epoch() > epoch, 30, poll_s=0.05, what="a leader after the restart")
    progress(work, t0)
    return t0, epoch


FAULTS = [
    ("kill -9 leader", fault_end_leader("kill")),
    ("SIGTERM leader", fault_end_leader("term")),
    ("SIGSTOP leader 0.5 T", fault_stop_leader(0.5)),
    ("SIGSTOP leader 2 T", fault_stop_leader(2)),
    ("freeze leader-PostgreSQL link", fault_freeze_link),
    ("cut leader-PostgreSQL link", fault_cut_link),
    ("freeze follower-PostgreSQL link", fault_freeze_follower_link),
    ("kill -9 follower", fault_kill_follower),
    ("PostgreSQL restart (immediate)", fault_pg_restart),
]


def run_matrix(reps, randomize, out=sys.stdout):
    """Runs every fault reps times under one workload; returns (problems, rows)."""
    c = Cluster(leader_timeout_ms=T_MS, fsync=True,
                tls=os.environ.get("SLUICE_FAULTS_TLS") == "1")
    timings = {name: [] for name, _ in FAULTS}
    gaps = {name: [] for name, _ in FAULTS}
    done = []  # (name, t0, epoch, t1)
    try:
        work = Workload(c).start()
        progress(work, now(), 20)
        for rep in range(reps):
            order = list(FAULTS)
            if randomize:
                random.shuffle(order)
            for name, fault in order:
                if randomize:
                    time.sleep(random.uniform(0, 0.5))  # a random moment of the load
                t0, epoch = fault(c, work)
                t1 = now()
                done.append((name, t0, epoch, t1))
                gaps[name].append(work.longest_gap(t0, t1))
                out.write("  %-32s rep %d: longest gap %.3f s\n" % (name, rep + 1, gaps[name][-1]))
                out.flush()
        progress(work, now(), 10)
        work.stop()
        # The first grant after each fault, before the next one began.
        for i, (name, t0, epoch, _) in enumerate(done):
            before = done[i + 1][1] if i + 1 < len(done) else None
            timings[name].append(work.first_grant_after(t0, epoch or 0, before))
        if work.errors:
            out.write("  client errors (answers that were not the claim): %d, e.g. %r\n"
                      % (len(work.errors), work.errors[:3]))
        if work.abandoned:
            kinds = {}
            for _, what, status in work.abandoned:
                kinds[(what, status)] = kinds.get((what, status), 0) + 1
            out.write("  claims abandoned by their clients: %d, by (step, status): %r\n"
                      % (len(work.abandoned), kinds))
        lead = c.wait_leader()
        events = read_events(lead.port)
        problems = check_history(events, work)
        for s in c.servers:
            report = s.sanitizer_report()
            if report:
                problems.append(report)
            if c.tls and "was not proven" in s.log():
                problems.append("server %d refused a leader of the cluster" % s.n)
        rows = []
        for name, _ in FAULTS:
            ts = [t for t in timings[name] if t is not None]
            rows.append((name, ts, gaps[name]))
        out.write("  %d claims acknowledged, %d grants, %d releases, %d events, %d streamed, "
                  "%d resource writes\n" % (len(work.created), len(work.grants),
                                            len(work.released), len(events),
                                            len(work.stream_ids), work.resource.accepted))
        return problems, rows, c.logs()
    finally:
        c.close()


def run_flapping(seconds, out=sys.stdout):
    """A random server killed (-9) or stopped (SIGTERM) every 1-3 s, and
    started again 1-3 s later, for seconds; then the same checks."""
    c = Cluster(leader_timeout_ms=T_MS, fsync=True,
                tls=os.environ.get("SLUICE_FAULTS_TLS") == "1")
    try:
        work = Workload(c).start()
        progress(work, now(), 20)
        end = now() + seconds
        rnd = random.Random()
        actions = 0
        while now() < end:
            down = [s for s in c.servers if not s.alive()]
            for s in down:
                s.start()
            victim = rnd.choice(c.servers)
            victim.kill9() if rnd.random() < 0.5 else victim.terminate()
            actions += 1
            time.sleep(rnd.uniform(1, 3))  # the fault's rhythm, not a wait for state
        for s in c.servers:
            if not s.alive():
                s.start()
        c.wait_leader()
        progress(work, now(), 10)
        work.stop()
        events = read_events(c.wait_leader().port)
        problems = check_history(events, work)
        out.write("  flapping for %d s: %d kills and stops, %d claims, %d grants, %d events, "
                  "longest client gap %.3f s\n"
                  % (seconds, actions, len(work.created), len(work.grants), len(events),
                     work.longest_gap(end - seconds, end)))
        return problems, c.logs()
    finally:
        c.close()


def stats(xs):
    if not xs:
        return "-"
    xs = sorted(xs)
    p95 = xs[min(len(xs) - 1, int(round(0.95 * (len(xs) - 1))))]
    return "%.3f / %.3f / %.3f" % (statistics.median(xs), p95, xs[-1])


def print_table(rows, out=sys.stdout):
    out.write("\n| fault | first grant after the fault, s (p50 / p95 / max) | "
              "longest client gap, s (p50 / p95 / max) |\n| --- | --- | --- |\n")
    for name, ts, gs in rows:
        out.write("| %s | %s | %s |\n" % (name, stats(ts), stats(gs)))


class TestFaultsSmoke(unittest.TestCase):
    def test_every_fault_once(self):
        problems, rows, logs = run_matrix(1, randomize=False)
        print_table(rows)
        if problems:
            sys.stderr.write(logs[-20000:])
        self.assertEqual(problems, [])
        # Loose bounds only (two noisy cores): a takeover within T plus the
        # rebuild plus a few seconds, after what the fault spent outside
        # sluice (one repetition: at most one such span per fault).
        for name, ts, _ in rows:
            outside = max(OUTSIDE_S.get(name, [0.0]))
            for t in ts:
                self.assertLess(t - outside, T_MS / 1000.0 + 5, name)


if __name__ == "__main__":
    if "--flap" in sys.argv:
        i = sys.argv.index("--flap")
        problems, logs = run_flapping(int(sys.argv[i + 1]) if len(sys.argv) > i + 1 else 60)
        if problems:
            print("PROBLEMS:\n" + "\n".join(problems))
            sys.exit(1)
        print("zero-tolerance checks: all zero")
        sys.exit(0)
    if "--full" in sys.argv:
        i = sys.argv.index("--full")
        reps = int(sys.argv[i + 1]) if len(sys.argv) > i + 1 and sys.argv[i + 1].isdigit() else 5
        problems, rows, logs = run_matrix(reps, randomize=True)
        if "--logs" in sys.argv:
            with open(sys.argv[sys.argv.index("--logs") + 1], "w") as f:
                f.write(logs)
        print_table(rows)
        if problems:
            print("PROBLEMS:\n" + "\n".join(problems))
            sys.exit(1)
        print("zero-tolerance checks: all zero")
        sys.exit(0)
    unittest.main(verbosity=2)
