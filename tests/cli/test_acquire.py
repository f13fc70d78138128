"""test_acquire.py - acquire's default lease and its keeper process
(docs/cli.md, "sluice acquire, release, renew"), against a real sluiced.

By default acquire sends a lease and leaves a detached process that renews
it while the calling script lives. Covered: `id=$(sluice acquire ...)`
returns at once (the keeper holds no end of the substitution's pipe); the
claim stays held across many leases while the caller lives, also when bash
runs the substitution in a subshell that exits at once; it is released soon
after the caller is killed, and the keeper is gone; the keeper exits after
`sluice release ID`; a revoked claim is released early when its caller
dies; an explicit --lease (or --lease 0) leaves no keeper.

Leases are 1 s (SLUICE_LEASE) so that "many leases" pass quickly; every
wait is on state the server or /proc reports, with a deadline.
"""
import os
import signal
import subprocess
import time

from cli_fixture import (ServerTestCase, base_env, kill_tree, main, pid_alive, sluice, tmpdir,
                         wait_until)

LEASES = 4  # the claim must outlive this many leases while its caller lives


def read(path):
    try:
        with open(path) as f:
            return f.read()
    except FileNotFoundError:
        return ""


def keepers(marker):
    """Pids of sluice-keeper processes whose command line holds marker."""
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/comm" % d) as f:
                if f.read().strip() != "sluice-keeper":
                    continue
            with open("/proc/%s/cmdline" % d, "rb") as f:
                if marker.encode() in f.read():
                    out.append(int(d))
        except OSError:
            continue
    return out


class AcquireKeeperTest(ServerTestCase):

    def env(self, **kw):
        kw.setdefault("SLUICE_LEASE", "1s")
        return base_env(self.srv, **kw)

    def script(self, shell, body, **env):
        """Runs a script in the background; its pid is the caller's. In a
        process group of its own, which the cleanup stops whole: a sluice
        acquire still waiting holds the script's stderr."""
        d = tmpdir(self)
        p = subprocess.Popen([shell, "-c", body], env=self.env(D=d, **env),
                             stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, start_new_session=True)
        self.addCleanup(kill_tree, p)
        return p, d

    def renewals(self, cid):
        return sum(1 for e in self.srv.all_events(0)
                   if e.get("claim") == cid and e["type"] == "claim.renewed")

    def assert_kept(self, cid, caller):
        """Held across LEASES leases of 1 s (3 renewals a lease) while the caller lives."""
        wait_until(lambda: self.renewals(cid) >= 3 * LEASES, 3 * LEASES,
                   what="%d renewals of %s" % (3 * LEASES, cid))
        self.assertTrue(pid_alive(caller.pid))
        got = self.srv.claim_get(cid)
        self.assertEqual((got["state"], got["lease"]), ("held", "1s"), got)

    def test_returns_at_once_keeps_the_claim_and_releases_it_when_the_caller_dies(self):
        t0 = time.monotonic()
        caller, d = self.script("sh", 'id=$("$SLUICE_BIN" acquire --mutex ak/one) || exit 9; '
                                      'echo "$id" > "$D/id"; exec sleep 120')
        cid = wait_until(lambda: read(os.path.join(d, "id")).strip(), 10,
                         what="the id from $(sluice acquire)")
        # The substitution ended while the keeper runs: nothing held its pipe.
        self.assertLess(time.monotonic() - t0, 5)
        got = self.srv.claim_get(cid)
        self.assertEqual((got["state"], got["holder"].rsplit(":", 1)[1]),
                         ("held", str(caller.pid)), got)
        keeper = wait_until(lambda: keepers("ak/one"), 5, what="the keeper process")
        self.assertEqual(len(keeper), 1)
        self.assert_kept(cid, caller)
        # The caller dies without releasing: the keeper releases for it, well
        # within one more lease, and exits.
        caller.send_signal(signal.SIGKILL)
        caller.wait(5)
        got = wait_until(lambda: (lambda c: c if c["state"] != "held" else None)(
            self.srv.claim_get(cid)), 5, what="the claim to end")
        self.assertEqual((got["state"], got["reason"]), ("released", "released by its holder"))
        wait_until(lambda: not pid_alive(keeper[0]), 5, what="the keeper to exit")

    def test_keeper_exits_after_sluice_release(self):
        caller, d = self.script("sh", 'id=$("$SLUICE_BIN" acquire --mutex ak/rel) || exit 9; '
                                      'echo "$id" > "$D/id"; exec sleep 120')
        cid = wait_until(lambda: read(os.path.join(d, "id")).strip(), 10, what="the id")
        keeper = wait_until(lambda: keepers("ak/rel"), 5, what="the keeper process")
        r = sluice(self.srv, "release", cid, env=self.env())
        self.assertEqual((r.rc, r.out), (0, "%s released\n" % cid), r)
        wait_until(lambda: not pid_alive(keeper[0]), 5, what="the keeper to exit")
        self.assertTrue(pid_alive(caller.pid))

    def test_a_subshell_that_exits_at_once_is_not_the_caller(self):
        # bash runs $(cmd 2>file) in a forked subshell that exits with acquire:
        # the caller is the script's shell, not that subshell.
        caller, d = self.script("bash", 'id=$("$SLUICE_BIN" acquire --mutex ak/sub '
                                        '2> "$D/err") || exit 9; echo "$id" > "$D/id"; '
                                        'exec sleep 120')
        cid = wait_until(lambda: read(os.path.join(d, "id")).strip(), 10, what="the id")
        self.assertEqual(self.srv.claim_get(cid)["holder"].rsplit(":", 1)[1], str(caller.pid))
        self.assert_kept(cid, caller)
        caller.send_signal(signal.SIGKILL)
        caller.wait(5)
        wait_until(lambda: self.srv.claim_get(cid)["state"] == "released", 5,
                   what="the claim to be released")

    def test_revoked_claim_is_released_when_its_caller_dies(self):
        caller, d = self.script("sh", 'id=$("$SLUICE_BIN" acquire --group ak/g) || exit 9; '
                                      'echo "$id" > "$D/id"; exec sleep 120')
        cid = wait_until(lambda: read(os.path.join(d, "id")).strip(), 10, what="the id")
        keeper = wait_until(lambda: keepers("ak/g"), 5, what="the keeper process")
        newer = self.srv.claim("ak-newer", group="ak/g", cancel="in-progress", grace="1h")
        self.assertEqual(newer["state"], "pending")
        self.assertEqual(self.srv.claim_get(cid)["state"], "revoking")
        self.assertTrue(pid_alive(keeper[0]))  # waiting for the caller or revoke_at
        caller.send_signal(signal.SIGKILL)
        caller.wait(5)
        got = self.srv.claim_get(newer["id"], "?wait=10s&seen=pending")
        self.assertEqual(got["state"], "held")  # long before its hour of grace
        wait_until(lambda: not pid_alive(keeper[0]), 5, what="the keeper to exit")
        self.srv.release(newer["id"])

    def test_explicit_lease_leaves_no_keeper(self):
        for lease, shown in (("1m", "1m"), ("0", "0")):
            name = "ak/explicit-%s" % lease
            r = sluice(self.srv, "acquire", "--json", "--mutex", name, "--lease", lease,
                       env=self.env())
            self.assertEqual(r.rc, 0, r)
            c = r.json()
            self.assertEqual((c["state"], c["lease"]), ("held", shown))
            # acquire has returned: a keeper would be running by now.
            self.assertEqual(keepers(name), [])
            self.srv.release(c["id"])

    def test_bad_sluice_lease_is_a_usage_error(self):
        for value, says in (("2d", "write 48h"), ("100ms", "too short")):
            r = sluice(self.srv, "acquire", "--mutex", "ak/bad", env=self.env(SLUICE_LEASE=value))
            self.assertEqual(r.rc, 2, r)
            self.assertIn("SLUICE_LEASE=%s" % value, r.err)
            self.assertIn(says, r.err)


if __name__ == "__main__":
    main()
