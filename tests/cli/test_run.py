"""test_run.py - `sluice run`, `acquire`, `release` and `renew` against a
real sluiced.

Covers: mutual exclusion checked by the commands themselves (eight runs on
one mutex, a semaphore of 3), a run killed with SIGKILL freeing its slot
when its lease runs out (and its command stopped), revocation by a newer
claim of the group (exit 125, SIGTERM then SIGKILL after --kill-grace),
every exit status docs/cli.md lists, signals passed on to the command, a
signal while waiting withdrawing the claim, the environment the command
gets, the wait shown on a terminal and silent elsewhere, acquire/release
from a shell script, and a server that is down at first and comes up
later.
"""
import json
import os
import signal
import subprocess
import time
import unittest

from cli_fixture import (RUN_ENDED, RUN_NOEXEC, RUN_NOTFOUND, RUN_REFUSED, RUN_REVOKED,
                         RUN_TIMEOUT, RUN_UNREACHABLE, RUN_USAGE, ServerTestCase, Sluiced, Tty,
                         base_env, finish, free_port, kill_tree, main, pid_alive, sluice, start,
                         tmpdir, wait_until)


def read(path):
    try:
        with open(path) as f:
            return f.read()
    except FileNotFoundError:
        return ""


class FixedPortSluiced(Sluiced):
    """A sluiced on a port chosen before it starts (the CLI was told it)."""

    def __init__(self, port, **kw):
        self.fixed_port = port
        super().__init__(**kw)

    def _command(self):
        self.port = self.fixed_port
        return super()._command()


class RunTest(ServerTestCase):

    def env(self, **kw):
        return base_env(self.srv, **kw)

    def holder_of(self, kind, name):
        """The claim id holding a lock (waits until one does)."""
        path = "/v1/%s/%s" % ("mutexes" if kind == "m" else "semaphores", name)
        lock = wait_until(lambda: self.srv.get(path).json["holders"], 15,
                          what="a holder of %s" % name)
        return lock[0]["claim"]

    def pending_on(self, key, holder):
        """Waits until a claim of holder waits in lock key's queue; its id."""
        def look():
            q = self.srv.get("/v1/queue?lock=" + key).json["queue"]
            return [c["id"] for c in q if c["holder"] == holder]
        return wait_until(look, 15, what="%s waiting on %s" % (holder, key))[0]

    # ---- mutual exclusion, checked by the commands ------------------------

    def test_eight_runs_on_one_mutex_never_overlap(self):
        d = tmpdir(self)
        # mkdir fails if another command is inside; the log shows any interleaving.
        script = ('mkdir "$D/inside" || exit 99; echo "enter $$" >> "$D/log"; sleep 0.05; '
                  'echo "exit $$" >> "$D/log"; rmdir "$D/inside"')
        env = self.env(D=d)
        procs = [start(self.srv, "run", "--mutex", "eight", "--", "sh", "-c", script, env=env)
                 for _ in range(8)]
        results = [finish(p) for p in procs]
        for r in results:
            self.assertEqual(r.rc, 0, r)
        lines = read(os.path.join(d, "log")).split()
        self.assertEqual(len(lines), 32, lines)
        entries = [lines[i:i + 4] for i in range(0, 32, 4)]
        for e in entries:
            self.assertEqual((e[0], e[2]), ("enter", "exit"), lines)
            self.assertEqual(e[1], e[3], "interleaved: %r" % lines)
        self.assertEqual(len({e[1] for e in entries}), 8)
        lock = self.srv.get("/v1/mutexes/eight").json
        self.assertEqual((lock["used"], lock["token"]), (0, 8))

    def test_semaphore_of_three_never_has_more_than_three(self):
        self.srv.sem_put("three", 3)
        d = tmpdir(self)
        since = self.srv.events()["next"]
        script = 'echo "enter $$" >> "$D/log"; sleep 0.5; echo "exit $$" >> "$D/log"'
        env = self.env(D=d)
        procs = [start(self.srv, "run", "--semaphore", "three", "--", "sh", "-c", script,
                       env=env) for _ in range(9)]
        for p in procs:
            r = finish(p)
            self.assertEqual(r.rc, 0, r)
        # What the commands saw...
        inside, most = 0, 0
        for line in read(os.path.join(d, "log")).splitlines():
            inside += 1 if line.startswith("enter") else -1
            most = max(most, inside)
        self.assertLessEqual(most, 3)
        self.assertGreaterEqual(most, 2)
        self.assertEqual(inside, 0)
        # ... and what the server granted: 3 at once, never 4.
        held, peak = 0, 0
        for ev in self.srv.all_events(since):
            if "sem/three" not in ev.get("locks", []):
                continue
            if ev["type"] == "claim.acquired":
                held += 1
            elif ev["type"] == "claim.released":
                held -= 1
            peak = max(peak, held)
        self.assertEqual(peak, 3)
        self.assertEqual(self.srv.get("/v1/semaphores/three").json["used"], 0)

    # ---- leases -----------------------------------------------------------

    def test_run_killed_with_sigkill_frees_its_slot_when_its_lease_runs_out(self):
        self.srv.sem_put("killslot", 1)
        d = tmpdir(self)
        p = start(self.srv, "run", "--semaphore", "killslot", "--lease", "2s", "--",
                  "sh", "-c", 'echo $$ > "$D/pid"; exec sleep 60', env=self.env(D=d),
                  start_new_session=True)
        self.addCleanup(kill_tree, p)
        pid = int(wait_until(lambda: read(os.path.join(d, "pid")).strip(), 15,
                             what="the command's pid"))
        old = self.holder_of("s", "killslot")
        p.send_signal(signal.SIGKILL)
        p.wait(10)
        # Still held: nothing freed it but the lease, which has not run out yet.
        self.assertEqual(self.srv.claim_get(old)["state"], "held")
        # The command lost its guard: it is stopped too (Linux: parent-death signal).
        wait_until(lambda: not pid_alive(pid), 10, what="the orphaned command to stop")
        r = sluice(self.srv, "run", "--semaphore", "killslot", "--timeout", "20s", "--", "true")
        self.assertEqual(r.rc, 0, r)
        gone = self.srv.claim_get(old)
        self.assertEqual(gone["state"], "expired", gone)

    def test_revoked_run_stops_its_command_and_exits_125(self):
        d = tmpdir(self)
        log = os.path.join(d, "log")
        script = ('trap "echo term >> \\"$D/log\\"; exit 0" TERM; echo started >> "$D/log"; '
                  'while :; do sleep 0.05; done')
        p = start(self.srv, "run", "--group", "rev", "--lease", "10s", "--", "sh", "-c",
                  script, env=self.env(D=d))
        wait_until(lambda: "started" in read(log), 15, what="the command to start")
        old = self.holder_of("m", "group/rev")
        newer = self.srv.claim("newer-rev", group="rev", cancel="in-progress", grace="30s")
        self.assertEqual(newer["state"], "pending")
        r = finish(p, 20)
        self.assertEqual(r.rc, RUN_REVOKED, r)
        self.assertIn("revoked", r.err)
        self.assertIn("term", read(log))  # the command got SIGTERM and exited by itself
        # sluice released at once: the newer claim holds long before its 30s grace.
        got = self.srv.claim_get(newer["id"], "?wait=10s&seen=pending")
        self.assertEqual(got["state"], "held")
        self.assertEqual(self.srv.claim_get(old)["state"], "canceled")
        self.srv.release(newer["id"])

    def test_revoked_command_that_ignores_sigterm_gets_sigkill_after_kill_grace(self):
        d = tmpdir(self)
        log = os.path.join(d, "log")
        script = 'trap "" TERM; echo started >> "$D/log"; while :; do sleep 0.05; done'
        p = start(self.srv, "run", "--group", "stubborn", "--kill-grace", "300ms", "--",
                  "sh", "-c", script, env=self.env(D=d))
        wait_until(lambda: "started" in read(log), 15, what="the command to start")
        newer = self.srv.claim("newer-stubborn", group="stubborn", cancel="in-progress",
                               grace="30s")
        r = finish(p, 20)
        self.assertEqual(r.rc, RUN_REVOKED, r)
        self.assertIn("SIGKILL", r.err)
        self.assertIn("status 137", r.err)  # 128 + SIGKILL
        self.assertEqual(self.srv.claim_get(newer["id"], "?wait=10s&seen=pending")["state"],
                         "held")
        self.srv.release(newer["id"])

    def test_revoked_command_is_dead_before_the_new_one_starts(self):
        """The report's reproduction: --grace 2s shorter than the old run's
        --kill-grace 6s. sluice cuts the kill grace to the claim's revoke_at
        (less its margin), so the new command starts only after the old one
        has stopped; the commands write their own timestamps."""
        d = tmpdir(self)
        log = os.path.join(d, "log")
        old_cmd = ("trap 'echo \"ignoring $(date +%s.%N)\" >> \"$D/log\"' TERM; "
                   "while :; do echo \"old $(date +%s.%N)\" >> \"$D/log\"; sleep 0.5; done")
        p_old = start(self.srv, "run", "--group", "pr-14", "--kill-grace", "6s", "--",
                      "sh", "-c", old_cmd, env=self.env(D=d))
        self.addCleanup(kill_tree, p_old)
        wait_until(lambda: "old " in read(log), 15, what="the old command to start")
        t0 = time.monotonic()
        r_new = sluice(self.srv, "run", "--group", "pr-14", "--cancel", "in-progress", "--grace",
                       "2s", "--", "sh", "-c",
                       'echo "new $(date +%s.%N)" >> "$D/log"; sleep 1', env=self.env(D=d))
        self.assertEqual(r_new.rc, 0, r_new)
        r_old = finish(p_old, 20)
        self.assertEqual(r_old.rc, RUN_REVOKED, r_old)
        lines = [l.split() for l in read(log).splitlines()]
        old_times = [float(t) for w, t in lines if w in ("old", "ignoring")]
        new_times = [float(t) for w, t in lines if w == "new"]
        self.assertEqual(len(new_times), 1, lines)
        self.assertLess(max(old_times), new_times[0], read(log))
        # Cut to end a second before revoke_at (or, had the revocation been heard
        # late on a loaded machine, SIGKILL at once).
        self.assertRegex(r_old.err, r"the server hands its slots on in \S+, (so --kill-grace 6s "
                                    r"is cut to \S+: stopping the command \(SIGTERM, SIGKILL "
                                    r"after \S+\)|too soon for --kill-grace 6s)")
        # ... and within the new claim's grace: the old one was stopped, not waited out.
        self.assertLess(time.monotonic() - t0, 2 + 1 + 5)

    def test_grace_shorter_than_the_margin_kills_at_once(self):
        d = tmpdir(self)
        log = os.path.join(d, "log")
        p = start(self.srv, "run", "--group", "pr-15", "--", "sh", "-c",
                  'trap "" TERM; echo started >> "$D/log"; while :; do sleep 0.05; done',
                  env=self.env(D=d))
        wait_until(lambda: "started" in read(log), 15, what="the command to start")
        # 900 ms: less than the 1 s margin, yet time enough to hear of it.
        newer = self.srv.claim("pr-15-newer", group="pr-15", cancel="in-progress",
                               grace="900ms")
        r = finish(p, 20)
        self.assertEqual(r.rc, RUN_REVOKED, r)
        self.assertIn("too soon for --kill-grace 10s: stopping the command with SIGKILL now",
                      r.err)
        self.assertIn("status 137", r.err)
        got = self.srv.claim_get(newer["id"], "?wait=10s&seen=pending")
        self.assertEqual(got["state"], "held")
        self.srv.release(newer["id"])

    # ---- exit statuses -----------------------------------------------------

    def test_exit_status_is_the_commands(self):
        r = sluice(self.srv, "run", "--mutex", "st", "--", "sh", "-c", "exit 7")
        self.assertEqual(r.rc, 7, r)
        r = sluice(self.srv, "run", "--mutex", "st", "--", "sh", "-c", "kill -USR1 $$")
        self.assertEqual(r.rc, 128 + signal.SIGUSR1, r)
        # the first argument may start the command without "--"
        r = sluice(self.srv, "run", "--mutex", "st", "sh", "-c", "exit 3")
        self.assertEqual(r.rc, 3, r)
        self.assertEqual(self.srv.get("/v1/mutexes/st").json["used"], 0)

    def test_exit_statuses_126_and_127(self):
        d = tmpdir(self)
        r = sluice(self.srv, "run", "--mutex", "x127", "--", os.path.join(d, "no-such-command"))
        self.assertEqual(r.rc, RUN_NOTFOUND, r)
        self.assertIn("cannot run", r.err)
        plain = os.path.join(d, "not-executable")
        with open(plain, "w") as f:
            f.write("echo hi\n")
        os.chmod(plain, 0o644)
        r = sluice(self.srv, "run", "--mutex", "x126", "--", plain)
        self.assertEqual(r.rc, RUN_NOEXEC, r)
        self.assertIn("Permission denied", r.err)
        # The claims were released all the same.
        for name in ("x126", "x127"):
            lock = self.srv.get("/v1/mutexes/" + name).json
            self.assertEqual((lock["used"], lock["token"]), (0, 1), lock)

    def test_exit_status_120_for_bad_flags(self):
        for args in (["--mutex"], ["--bogus", "--", "true"], ["--mutex", "m"],
                     ["--semaphore", "s:0", "--", "true"], ["--lease", "5 minutes", "--mutex",
                                                            "m", "--", "true"],
                     ["--cancel", "pending", "--mutex", "m", "--", "true"], ["--", "true"],
                     ["--priority", "high", "--mutex", "m", "--", "true"]):
            r = sluice(self.srv, "run", *args)
            self.assertEqual(r.rc, RUN_USAGE, r)
            self.assertIn("sluice run --help", r.err, r)
        r = sluice(self.srv, "run", "--mutex", "m", "--", "true",
                   env=self.env(SLUICE_CLAIM_TIMEOUT="soon"))
        self.assertEqual(r.rc, RUN_USAGE, r)
        self.assertIn("SLUICE_CLAIM_TIMEOUT", r.err)

    def test_day_unit_is_refused_as_the_api_refuses_it(self):
        # One grammar: the API has no day unit, so neither has the CLI.
        api = self.srv.post("/v1/claims", {"holder": "x", "locks": [{"mutex": "days"}],
                                           "timeout": "1d"})
        self.assertEqual(api.status, 400, api)
        r = sluice(self.srv, "run", "--timeout", "2d", "--mutex", "days", "--", "true")
        self.assertEqual(r.rc, RUN_USAGE, r)
        self.assertIn("--timeout 2d is not a duration: there is no day unit; write 48h", r.err)
        r = sluice(self.srv, "run", "--mutex", "days", "--", "true",
                   env=self.env(SLUICE_CLAIM_TIMEOUT="1d"))
        self.assertEqual(r.rc, RUN_USAGE, r)
        self.assertIn("SLUICE_CLAIM_TIMEOUT=1d is not a duration", r.err)
        self.assertIn("write 24h", r.err)
        self.assertEqual(self.srv.get("/v1/mutexes/days").json["token"], 0)  # nothing sent

    def test_lease_below_one_second_is_refused(self):
        for lease in ("1ms", "999ms", "0.5s"):
            r = sluice(self.srv, "run", "--mutex", "short/l", "--lease", lease, "--", "true")
            self.assertEqual(r.rc, RUN_USAGE, r)
            self.assertIn("--lease %s is too short: a lease is 0 (none) or at least 1s" % lease,
                          r.err)
            self.assertIn("every third of the lease", r.err)
            r = sluice(self.srv, "acquire", "--mutex", "short/l", "--lease", lease)
            self.assertEqual(r.rc, 2, r)
        self.assertEqual(self.srv.get("/v1/mutexes/short/l").json["token"], 0)  # nothing sent
        for lease in ("1s", "0"):
            r = sluice(self.srv, "run", "--mutex", "short/l", "--lease", lease, "--", "true")
            self.assertEqual(r.rc, 0, r)

    def test_exit_status_121_when_the_server_refuses(self):
        r = sluice(self.srv, "run", "--semaphore", "never-configured", "--", "true")
        self.assertEqual(r.rc, RUN_REFUSED, r)
        self.assertIn("never-configured", r.err)
        r = sluice(self.srv, "run", "--mutex", "bad//name", "--", "true")
        self.assertEqual(r.rc, RUN_REFUSED, r)

    def test_exit_status_123_when_timeout_expires_server_side(self):
        held = self.srv.claim("blocker-123", [("m", "t123")])
        r = sluice(self.srv, "run", "--mutex", "t123", "--timeout", "300ms", "--holder",
                   "late-123", "--", "true")
        self.assertEqual(r.rc, RUN_TIMEOUT, r)
        mine = self.srv.get("/v1/claims?holder=late-123").json["claims"]
        # The timeout's value and the last reason it waited, with where to look.
        self.assertIn("sluice: claim %s timed out after 300ms: it was still waiting because "
                      "at_limit: mtx/t123 has 1 of 1 slots in use (who holds mtx/t123: "
                      "sluice mutex info t123)" % mine[0]["id"], r.err)
        self.assertEqual([c["state"] for c in mine], ["timed_out"])
        self.srv.release(held["id"])

    def test_exit_status_123_when_claim_timeout_expires_client_side(self):
        held = self.srv.claim("blocker-123c", [("m", "t123c")])
        r = sluice(self.srv, "run", "--mutex", "t123c", "--holder", "late-123c", "--", "true",
                   env=self.env(SLUICE_CLAIM_TIMEOUT="400ms"))
        self.assertEqual(r.rc, RUN_TIMEOUT, r)
        self.assertIn("SLUICE_CLAIM_TIMEOUT", r.err)
        self.assertIn("it was still waiting because at_limit: mtx/t123c has 1 of 1 slots in "
                      "use", r.err)
        # It withdrew its claim rather than leave it in the queue.
        mine = self.srv.get("/v1/claims?holder=late-123c").json["claims"]
        self.assertEqual([c["state"] for c in mine], ["withdrawn"])
        self.srv.release(held["id"])

    def test_exit_status_124_when_superseded_while_waiting(self):
        first = self.srv.claim("sup-first", group="sup")
        self.assertEqual(first["state"], "held")
        p = start(self.srv, "run", "--group", "sup", "--holder", "sup-mine", "--", "true")
        self.pending_on("mtx/group/sup", "sup-mine")
        newest = self.srv.claim("sup-newest", group="sup", cancel="pending")
        r = finish(p)
        self.assertEqual(r.rc, RUN_ENDED, r)
        self.assertIn("superseded", r.err)
        self.srv.release(first["id"])
        self.srv.release(newest["id"])

    def test_operator_cancel_while_waiting_exits_124(self):
        held = self.srv.claim("opc-blocker", [("m", "opc-wait")])
        p = start(self.srv, "run", "--mutex", "opc-wait", "--holder", "opc-mine", "--", "true")
        cid = self.pending_on("mtx/opc-wait", "opc-mine")
        r = sluice(self.srv, "queue", "cancel", cid)
        self.assertEqual((r.rc, r.out), (0, "%s canceled\n" % cid), r)
        r = finish(p)
        self.assertEqual(r.rc, RUN_ENDED, r)
        self.assertIn("claim %s was canceled by an operator (sluice queue cancel) before it was "
                      "held" % cid, r.err)
        got = self.srv.claim_get(cid)
        self.assertEqual((got["state"], got["reason"]), ("canceled", "canceled by an operator"))
        self.srv.release(held["id"])

    def test_operator_cancel_while_running_stops_the_command_and_exits_125(self):
        d = tmpdir(self)
        log = os.path.join(d, "log")
        script = ('trap "echo term >> \\"$D/log\\"; exit 0" TERM; echo started >> "$D/log"; '
                  'while :; do sleep 0.05; done')
        p = start(self.srv, "run", "--mutex", "opc-run", "--", "sh", "-c", script,
                  env=self.env(D=d))
        wait_until(lambda: "started" in read(log), 15, what="the command to start")
        cid = self.holder_of("m", "opc-run")
        r = sluice(self.srv, "queue", "cancel", cid)
        self.assertEqual((r.rc, r.out), (0, "%s canceled\n" % cid), r)
        r = finish(p, 20)
        # The command ran and was stopped: 125, as for any claim lost while it runs.
        self.assertEqual(r.rc, RUN_REVOKED, r)
        self.assertIn("the claim was canceled by an operator (sluice queue cancel); stopping the "
                      "command", r.err)
        self.assertNotIn("released by its holder", r.err)
        self.assertIn("term", read(log))
        got = self.srv.claim_get(cid)
        self.assertEqual((got["state"], got["reason"]), ("canceled", "canceled by an operator"))
        self.assertEqual(self.srv.get("/v1/mutexes/opc-run").json["used"], 0)

    def test_exit_status_122_when_the_server_cannot_be_reached(self):
        env = self.env(SLUICE_SERVER="http://127.0.0.1:%d" % free_port(),
                       SLUICE_CLAIM_TIMEOUT="500ms")
        t0 = time.monotonic()
        r = sluice(None, "run", "--mutex", "m", "--", "true", env=env)
        self.assertEqual(r.rc, RUN_UNREACHABLE, r)
        self.assertIn("could not reach", r.err)
        self.assertLess(time.monotonic() - t0, 10)

    # ---- signals -----------------------------------------------------------

    def test_signals_sent_to_sluice_reach_the_command(self):
        d = tmpdir(self)
        log = os.path.join(d, "log")
        script = ('trap "echo usr1 >> \\"$D/log\\"" USR1; echo started >> "$D/log"; '
                  'while :; do sleep 0.05; done')
        p = start(self.srv, "run", "--mutex", "fwd", "--", "sh", "-c", script,
                  env=self.env(D=d))
        wait_until(lambda: "started" in read(log), 15, what="the command to start")
        p.send_signal(signal.SIGUSR1)
        wait_until(lambda: "usr1" in read(log), 10, what="the command to get SIGUSR1")
        p.send_signal(signal.SIGTERM)
        r = finish(p)
        self.assertEqual(r.rc, 128 + signal.SIGTERM, r)  # the command's death, passed on
        self.assertEqual(self.srv.get("/v1/mutexes/fwd").json["used"], 0)

    def test_signal_while_waiting_withdraws_the_claim(self):
        held = self.srv.claim("blocker-sig", [("m", "sigwait")])
        p = start(self.srv, "run", "--mutex", "sigwait", "--holder", "sig-mine", "--", "true")
        cid = self.pending_on("mtx/sigwait", "sig-mine")
        p.send_signal(signal.SIGTERM)
        r = finish(p)
        self.assertEqual(r.rc, -signal.SIGTERM, r)  # died of it, as a shell expects
        self.assertEqual(self.srv.claim_get(cid)["state"], "withdrawn")
        self.srv.release(held["id"])

    # ---- what the command sees and what people see ------------------------

    def test_command_environment_has_claim_id_and_fencing_tokens(self):
        self.srv.sem_put("envsem", 4)
        r = sluice(self.srv, "run", "--mutex", "envm", "--semaphore", "envsem:2", "--",
                   "sh", "-c", 'echo "$SLUICE_CLAIM_ID|$SLUICE_FENCING_TOKEN|'
                   '$SLUICE_FENCING_TOKENS|$SLUICE_SERVER"')
        self.assertEqual(r.rc, 0, r)
        cid, tok, toks, server = r.out.strip().split("|")
        claim = self.srv.claim_get(cid)
        self.assertEqual(claim["state"], "released")
        locks = {l["name"]: l["token"] for l in claim["locks"]}
        self.assertEqual(tok, str(locks["envm"]))
        self.assertEqual(toks, "mtx/envm=%d,sem/envsem=%d" % (locks["envm"], locks["envsem"]))
        self.assertEqual([l["slots"] for l in claim["locks"]], [1, 2])
        self.assertEqual(server, "http://127.0.0.1:%d" % self.srv.port)

    def test_fencing_tokens_are_keyed_by_lock_key(self):
        self.srv.sem_put("amb", 2)
        self.srv.sem_put("tag/env=*", 5)
        r = sluice(self.srv, "run", "--mutex", "amb", "--semaphore", "amb", "--tag", "env=prod",
                   "--group", "g9", "--", "sh", "-c", 'echo "$SLUICE_FENCING_TOKENS"')
        self.assertEqual(r.rc, 0, r)
        got = r.out.strip()
        entries = [e.rsplit("=", 1) for e in got.split(",")]
        self.assertEqual([k for k, _ in entries],
                         ["mtx/amb", "sem/amb", "sem/tag/env=prod", "mtx/group/g9"], got)
        self.assertTrue(all(t.isdigit() for _, t in entries), got)
        lock = self.srv.get("/v1/semaphores/tag/env=prod").json
        self.assertEqual(dict(entries)["sem/tag/env=prod"], str(lock["token"]))

    def test_tag_that_adds_no_lock_is_warned_about(self):
        self.srv.sem_put("tag/tenant=*", 2)
        r = sluice(self.srv, "run", "--tag", "tennant=acme", "--", "sh", "-c",
                   'echo "[$SLUICE_FENCING_TOKENS]"')
        self.assertEqual(r.rc, 0, r)  # it still runs
        self.assertEqual(r.out, "[]\n")
        self.assertIn("warning: --tag tennant=acme adds no lock: none of the semaphores "
                      "tag/tennant=acme, tag/tennant=* or tag/tennant is configured", r.err)
        # A tag that adds a lock, next to one that adds none: one warning.
        r = sluice(self.srv, "run", "--tag", "tenant=acme", "--tag", "tier=gold", "--", "true")
        self.assertEqual(r.rc, 0, r)
        self.assertNotIn("tenant=acme adds", r.err)
        self.assertIn("--tag tier=gold adds no lock", r.err)
        self.assertEqual(r.err.count("warning"), 1, r)

    def test_wait_is_shown_on_a_terminal(self):
        held = self.srv.claim("blocker-tty", [("m", "ttyq")])
        t = Tty(self.srv, "run", "--mutex", "ttyq", "--", "echo", "ran-after-wait",
                stdout_tty=False)
        t.wait_for(r"waiting: at_limit: mtx/ttyq has 1 of 1 slots in use \(position 1\)")
        self.srv.release(held["id"])
        rc, text, out, err = t.finish()
        self.assertEqual(rc, 0, text)
        self.assertEqual(out, "ran-after-wait\n")
        # The status line is cleared before the command runs.
        self.assertTrue(text.endswith("\r\x1b[K"), repr(text))

    def test_wait_is_quiet_elsewhere(self):
        held = self.srv.claim("blocker-quiet", [("m", "quietq")])
        p = start(self.srv, "run", "--mutex", "quietq", "--holder", "quiet-mine", "--",
                  "echo", "ok")
        self.pending_on("mtx/quietq", "quiet-mine")
        self.srv.release(held["id"])
        r = finish(p)
        self.assertEqual((r.rc, r.out, r.err), (0, "ok\n", ""), r)

    # ---- acquire / release ---------------------------------------------------

    def test_acquire_and_release_from_a_shell_script(self):
        d = tmpdir(self)
        script = r'''
set -e
id=$("$SLUICE_BIN" acquire --mutex scripted --lease 1m)
echo "id=$id"
"$SLUICE_BIN" claims info "$id" --json > "$D/info.json"
set +e
"$SLUICE_BIN" acquire --mutex scripted --timeout 300ms 2> "$D/second.err"
echo "second=$?"
set -e
"$SLUICE_BIN" renew "$id" > "$D/renew.out"
"$SLUICE_BIN" release "$id"
id2=$("$SLUICE_BIN" acquire --mutex scripted --timeout 5s)
"$SLUICE_BIN" release -- "$id2" > /dev/null
echo "done"
'''
        p = subprocess.run(["sh", "-c", script], env=self.env(D=d), capture_output=True,
                           text=True, timeout=30)
        self.assertEqual(p.returncode, 0, p)
        lines = p.stdout.splitlines()
        self.assertTrue(lines[0].startswith("id="), p.stdout)
        cid = lines[0][3:]
        self.assertEqual(lines[1:], ["second=%d" % RUN_TIMEOUT, "%s released" % cid, "done"])
        info = json.loads(read(os.path.join(d, "info.json")))
        self.assertEqual((info["id"], info["state"], info["lease"]), (cid, "held", "1m"))
        self.assertTrue(read(os.path.join(d, "renew.out")).startswith(cid + " held, expires "))
        self.assertIn("timed out", read(os.path.join(d, "second.err")))
        lock = self.srv.get("/v1/mutexes/scripted").json
        self.assertEqual((lock["used"], lock["token"]), (0, 2))

    def test_lock_flags_reach_the_claim(self):
        self.srv.sem_put("flag:sem", 3)
        self.srv.sem_put("tag/env=*", 5)
        r = sluice(self.srv, "acquire", "--json", "--mutex", "flag-m", "--semaphore",
                   "flag:sem:2", "--tag", "env=prod", "--group", "flag-g", "--cancel",
                   "pending", "--grace", "1m", "--priority", "-7", "--rebalance-key", "k1",
                   "--lease", "1h30m", "--timeout", "90")
        self.assertEqual(r.rc, 0, r)
        c = r.json()
        self.assertEqual([(l["kind"], l["name"], l["slots"]) for l in c["locks"]],
                         [("mutex", "flag-m", 1), ("semaphore", "flag:sem", 2),
                          ("semaphore", "tag/env=prod", 1), ("mutex", "group/flag-g", 1)])
        self.assertEqual((c["tags"], c["group"], c["priority"], c["rebalance_key"], c["lease"],
                          c["timeout"]),
                         ({"env": "prod"}, "flag-g", -7, "k1", "1h30m", "1m30s"))
        # The default holder is the calling process: acquire belongs to its script.
        self.assertTrue(c["holder"].endswith(":%d" % os.getpid()), c["holder"])
        self.srv.release(c["id"])
        r = sluice(self.srv, "acquire", "--json", "--mutex", "flag-m2", "--lease", "1.5s",
                   env=self.env(SLUICE_HOLDER="from-env"))
        c = r.json()
        self.assertEqual((c["holder"], c["lease"]), ("from-env", "1.5s"))
        self.srv.release(c["id"])
        for bad in ("5 minutes", "1x", "-1s", "1e3s", "0x10", ""):
            r = sluice(self.srv, "acquire", "--mutex", "flag-m", "--lease", bad)
            self.assertEqual(r.rc, 2, r)
            self.assertIn("not a duration", r.err)

    def test_default_holder_names_the_account_when_user_is_unset(self):
        import pwd
        r = sluice(self.srv, "acquire", "--json", "--mutex", "nouser", "--lease", "0",
                   env=self.env(USER=None))
        self.assertEqual(r.rc, 0, r)
        c = r.json()
        self.assertEqual(c["holder"], "%s@%s:%d" % (pwd.getpwuid(os.geteuid()).pw_name,
                                                    os.uname().nodename, os.getpid()))
        self.srv.release(c["id"])

    def test_acquire_statuses_and_json(self):
        r = sluice(self.srv, "acquire", "--json", "--mutex", "acqj", "--holder", "acq-json")
        self.assertEqual(r.rc, 0, r)
        claim = r.json()
        self.assertEqual((claim["state"], claim["holder"]), ("held", "acq-json"))
        self.assertEqual(claim["lease"], "30s")  # as run: its keeper renews it
        r = sluice(self.srv, "acquire")
        self.assertEqual(r.rc, 2, r)
        r = sluice(self.srv, "acquire", "--semaphore", "not-configured-acq")
        self.assertEqual(r.rc, 1, r)
        r = sluice(self.srv, "release", claim["id"])
        self.assertEqual((r.rc, r.out), (0, "%s released\n" % claim["id"]), r)
        # Releasing again answers the same; an unknown id is 404: status 1.
        r = sluice(self.srv, "release", claim["id"])
        self.assertEqual((r.rc, r.out), (0, "%s released\n" % claim["id"]), r)
        r = sluice(self.srv, "release", "AAAAAAAAAAAAAAAAAAAAAA")
        self.assertEqual(r.rc, 1, r)
        r = sluice(self.srv, "renew", claim["id"])
        self.assertEqual(r.rc, 1, r)
        self.assertIn("stop using", r.err)
        # --json: the server's claim, for renew and release alike
        c = self.srv.claim("acq-json2", [("m", "acqj2")], lease="1m")
        r = sluice(self.srv, "renew", "--json", c["id"])
        self.assertEqual(r.rc, 0, r)
        self.assertEqual((r.json()["id"], r.json()["state"]), (c["id"], "held"))
        r = sluice(self.srv, "release", c["id"], "--json")
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(r.json(), self.srv.claim_get(c["id"]))
        self.assertEqual(r.json()["state"], "released")


class ServerLaterTest(unittest.TestCase):
    """sluice run started while no server listens: it retries, and runs its
    command once the server comes up."""

    def test_server_down_at_first_then_up(self):
        port = free_port()
        d = tmpdir(self)
        env = base_env(None, SLUICE_SERVER="http://127.0.0.1:%d" % port, D=d)
        # stderr on a terminal: it says it cannot reach the server, and retries.
        t = Tty(None, "run", "--mutex", "late", "--", "sh", "-c", 'echo ran > "$D/out"',
                env=env, stdout_tty=False)
        try:
            t.wait_for(r"cannot reach")
            srv = FixedPortSluiced(port, log_level="warn")
        except BaseException:
            t.proc.kill()
            raise
        try:
            rc, text, out, err = t.finish(30)
            self.assertEqual(rc, 0, text)
            self.assertEqual(read(os.path.join(d, "out")), "ran\n")
            lock = srv.get("/v1/mutexes/late").json
            self.assertEqual((lock["used"], lock["token"]), (0, 1))
        finally:
            srv.stop()


class RestartWhileWaitingTest(unittest.TestCase):
    """A server stopping while `sluice run` waits for its claim: the claim
    is kept, the run waits on across the restart and runs its command once
    the lock is free. (The stopping server used to end the creation's 201
    with an error body, which the run took for a refusal: exit 121.)"""

    def test_waiting_run_survives_a_server_restart(self):
        port = free_port()
        d = tmpdir(self)
        srv = FixedPortSluiced(port, log_level="warn")
        try:
            blocker = srv.claim("restart-blocker", [("m", "restart-m")], lease="0")
            env = base_env(srv, D=d)
            p = start(srv, "run", "--mutex", "restart-m", "--holder", "restart-waiter", "--",
                      "sh", "-c", 'echo ran > "$D/out"', env=env)
            wait_until(lambda: [c for c in srv.get("/v1/queue?lock=mtx/restart-m").json["queue"]
                                if c["holder"] == "restart-waiter"], 15, what="the run waiting")
            srv.restart()
            srv.release(blocker["id"])
            r = finish(p)
            self.assertEqual(r.rc, 0, r)
            self.assertEqual(read(os.path.join(d, "out")), "ran\n")
        finally:
            srv.stop()


if __name__ == "__main__":
    main()
