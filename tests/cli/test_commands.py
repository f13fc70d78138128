"""test_commands.py - every `sluice` subcommand's table and --json output,
against a real sluiced.

Covers: status; sem (and pools) list/info/set/rm; mutex list/info; queue
list/why/cancel; claims list/info/release (by holder prefix); events (a page, --since, --claim,
--follow in both forms); tables aligned by column (read back by the header's
offsets), bold headers, colour only on a terminal and never with NO_COLOR,
relative times on a terminal and RFC 3339 elsewhere; --json being the
server's own JSON; --help for every command; usage errors (2), server
errors (1, with a hint), an unreachable server (3); --token and
SLUICE_TOKEN; and the README's example, run as shown.
"""
import hashlib
import json
import os
import re
import signal
import subprocess
import threading
import time

from cli_fixture import (ANSI, ServerTestCase, Tty, base_env, free_port, main, parse_fields,
                         parse_table, sluice, sluice_bin, start, wait_until)

RFC3339 = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
HERE = os.path.dirname(os.path.abspath(__file__))
README = os.path.join(HERE, "..", "..", "README.md")
COMMANDS = ["run", "acquire", "release", "renew", "sem", "pools", "mutex", "queue", "claims",
            "events", "status", "token"]


class CommandsTest(ServerTestCase):

    def ok(self, *args, **kw):
        r = sluice(self.srv, *args, **kw)
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(r.err, "", r)
        return r

    def table(self, *args):
        return parse_table(self.ok(*args).out)

    # ---- status --------------------------------------------------------------

    def test_status(self):
        self.srv.claim("status-holder", [("m", "status-m")])
        health = self.srv.get("/healthz").json
        f = parse_fields(self.ok("status").out)
        self.assertEqual(f["Server"], "http://127.0.0.1:%d" % self.srv.port)
        self.assertEqual((f["Status"], f["Version"], f["Store"]),
                         ("ok", health["version"], health["store"]))
        self.assertEqual((int(f["Pending"]), int(f["Held"]), int(f["Ended"])),
                         (health["claims"]["pending"], health["claims"]["held"],
                          health["claims"]["ended"]))
        self.assertEqual(int(f["Events"]), health["next_seq"] - 1)
        self.assertEqual(self.ok("status", "--json").json(), health)
        self.assertEqual(self.ok("--json", "status").json(), health)

    # ---- semaphores ------------------------------------------------------------

    def test_sem_set_list_info_rm(self):
        f = parse_fields(self.ok("sem", "set", "cmd-db", "2", "--strategy", "skip", "--lease",
                                 "1m").out)
        self.assertEqual((f["Name"], f["Kind"], f["Limit"], f["Used"], f["Strategy"], f["Lease"]),
                         ("cmd-db", "semaphore", "2", "0", "skip", "1m"))
        self.ok("sem", "set", "cmd-tenant/*", "1")
        a = self.srv.claim("cmd-alpha", [("s", "cmd-db", 2)])
        b = self.srv.claim("cmd-beta", [("s", "cmd-db")], priority=4)
        t = self.srv.claim("cmd-gamma", [("s", "cmd-tenant/x")])

        names, rows = self.table("sem", "list")
        self.assertEqual(names, ["NAME", "LIMIT", "USED", "STRATEGY", "LEASE", "HOLDERS",
                                 "PENDING", "TOKEN", "FROM", "RULES"])
        by = {r["NAME"]: r for r in rows}
        self.assertEqual(by["cmd-db"], {"NAME": "cmd-db", "LIMIT": "2", "USED": "2",
                                        "STRATEGY": "skip", "LEASE": "1m", "HOLDERS": "1",
                                        "PENDING": "1", "TOKEN": "1", "FROM": "-",
                                        "RULES": "-"})
        self.assertEqual(by["cmd-tenant/*"]["LEASE"], "none")
        self.assertEqual((by["cmd-tenant/x"]["USED"], by["cmd-tenant/x"]["FROM"]),
                         ("1", "cmd-tenant/*"))
        # --json: the server's listing, item for item
        self.assertEqual(self.ok("sem", "list", "--json").json(),
                         self.srv.get("/v1/semaphores").json)
        # sem with no subcommand lists too
        self.assertEqual(self.ok("sem").out, self.ok("sem", "list").out)

        out = self.ok("sem", "info", "cmd-db").out
        f = parse_fields(out)
        self.assertEqual((f["Limit"], f["Used"], f["Token"]), ("2", "2", "1"))
        holders, pending = out.split("\nHolders (1):\n")[1].split("\nPending (1):\n")
        _, hrows = parse_table(holders)
        self.assertEqual([(r["CLAIM"], r["HOLDER"], r["SLOTS"], r["TOKEN"]) for r in hrows],
                         [(a["id"], "cmd-alpha", "2", "1")])
        self.assertRegex(hrows[0]["SINCE"], RFC3339)
        self.assertRegex(hrows[0]["EXPIRES"], RFC3339)  # the semaphore's lease of 1m
        _, prows = parse_table(pending)
        self.assertEqual([(r["POS"], r["CLAIM"], r["HOLDER"], r["SLOTS"], r["PRIORITY"])
                          for r in prows], [("1", b["id"], "cmd-beta", "1", "4")])
        self.assertEqual(prows[0]["REASON"], "at_limit: sem/cmd-db has 2 of 2 slots in use")
        self.assertEqual(self.ok("sem", "info", "cmd-db", "--json").json(),
                         self.srv.get("/v1/semaphores/cmd-db").json)

        # rm while in use: the server's 409, status 1 and what to do
        r = sluice(self.srv, "sem", "rm", "cmd-db")
        self.assertEqual(r.rc, 1, r)
        self.assertIn("sluice sem info cmd-db", r.err)
        for c in (a, b, t):
            self.srv.release(c["id"])
        self.assertEqual(self.ok("sem", "rm", "cmd-db").out, "deleted semaphore cmd-db\n")
        self.assertEqual(self.ok("sem", "rm", "cmd-tenant/*", "--json").json(),
                         {"deleted": "cmd-tenant/*"})
        r = sluice(self.srv, "sem", "info", "cmd-db")
        self.assertEqual(r.rc, 1, r)
        self.assertIn("sluice sem set cmd-db LIMIT", r.err)

    def test_pools_are_semaphores(self):
        f = parse_fields(self.ok("pools", "set", "cmd-pool", "3").out)
        self.assertEqual((f["Name"], f["Limit"], f["Strategy"]), ("cmd-pool", "3", "strict"))
        self.assertEqual(self.ok("pools", "list").out, self.ok("sem", "list").out)
        self.assertEqual(self.ok("pools", "info", "cmd-pool", "--json").json(),
                         self.srv.get("/v1/semaphores/cmd-pool").json)
        self.ok("pools", "rm", "cmd-pool")
        self.assertEqual(self.srv.get("/v1/semaphores/cmd-pool").status, 404)

    # ---- mutexes -----------------------------------------------------------------

    def test_mutex_list_and_info(self):
        a = self.srv.claim("mx-alpha", [("m", "cmd-mx")])
        b = self.srv.claim("mx-beta", [("m", "cmd-mx")])
        names, rows = self.table("mutex", "list")
        self.assertEqual(names, ["NAME", "HOLDERS", "PENDING", "TOKEN"])
        by = {r["NAME"]: r for r in rows}
        self.assertEqual(by["cmd-mx"], {"NAME": "cmd-mx", "HOLDERS": "1", "PENDING": "1",
                                        "TOKEN": "1"})
        self.assertEqual(self.ok("mutex", "list", "--json").json(),
                         self.srv.get("/v1/mutexes").json)
        out = self.ok("mutex", "info", "cmd-mx").out
        f = parse_fields(out)
        self.assertEqual((f["Name"], f["Kind"], f["Held"], f["Token"]),
                         ("cmd-mx", "mutex", "yes", "1"))
        _, hrows = parse_table(out.split("\nHolders (1):\n")[1].split("\n\n")[0])
        self.assertEqual([r["CLAIM"] for r in hrows], [a["id"]])
        self.assertEqual(hrows[0]["EXPIRES"], "-")  # no lease
        _, prows = parse_table(out.split("\nPending (1):\n")[1])
        self.assertEqual([(r["POS"], r["CLAIM"]) for r in prows], [("1", b["id"])])
        self.assertEqual(self.ok("mutex", "info", "cmd-mx", "--json").json(),
                         self.srv.get("/v1/mutexes/cmd-mx").json)
        # Every mutex name answers, used or not.
        f = parse_fields(self.ok("mutex", "info", "cmd-never-used").out)
        self.assertEqual(f["Held"], "no")
        self.srv.release(a["id"])
        self.srv.release(b["id"])

    # ---- the queue and claims ------------------------------------------------------

    def test_queue_list_why_cancel(self):
        self.srv.sem_put("q-db", 1)
        held = self.srv.claim("q-holder", [("s", "q-db")])
        low = self.srv.claim("q-low", [("s", "q-db")])
        high = self.srv.claim("q-high", [("s", "q-db"), ("m", "q-m")], priority=9)
        names, rows = self.table("queue", "list", "--lock", "sem/q-db")
        self.assertEqual(names, ["POS", "CLAIM", "HOLDER", "PRIORITY", "LOCKS", "CREATED",
                                 "REASON"])
        self.assertEqual([(r["POS"], r["CLAIM"], r["HOLDER"], r["PRIORITY"], r["LOCKS"])
                          for r in rows],
                         [("1", high["id"], "q-high", "9", "sem/q-db,mtx/q-m"),
                          ("2", low["id"], "q-low", "0", "sem/q-db")])
        self.assertRegex(rows[0]["CREATED"], RFC3339)
        self.assertEqual([r["REASON"] for r in rows],
                         ["at_limit: sem/q-db has 1 of 1 slots in use"] * 2)
        self.assertEqual(self.ok("queue", "list", "--lock", "sem/q-db", "--json").json(),
                         self.srv.get("/v1/queue?lock=sem/q-db").json)
        # queue and queue list are the same; the whole queue holds ours in order
        _, allrows = parse_table(self.ok("queue").out)
        ours = [r["CLAIM"] for r in allrows if r["HOLDER"].startswith("q-")]
        self.assertEqual(ours, [high["id"], low["id"]])

        out = self.ok("queue", "why", high["id"]).out
        self.assertTrue(out.startswith("Claim %s is pending:\n" % high["id"]), out)
        _, wrows = parse_table(out.split("\n", 1)[1])
        why = self.srv.get("/v1/claims/%s/why" % high["id"]).json
        self.assertEqual([(r["LOCK"], r["RULE"], r["USED"], r["LIMIT"], r["POSITION"],
                           r["AHEAD"], r["MESSAGE"]) for r in wrows],
                         [(w["lock"], w["rule"], str(w["used"]), str(w["limit"]),
                           str(w["position"]), str(w["ahead_count"]), w["message"])
                          for w in why["reasons"]])
        self.assertEqual(wrows[0]["RULE"], "at_limit")
        self.assertEqual(self.ok("queue", "why", high["id"], "--json").json(), why)
        self.assertEqual(self.ok("queue", "why", held["id"]).out,
                         "Claim %s is held: nothing blocks it.\n" % held["id"])

        # An operator's cancel, not the client's own withdrawal or release.
        self.assertEqual(self.ok("queue", "cancel", low["id"]).out, "%s canceled\n" % low["id"])
        got = self.srv.claim_get(low["id"])
        self.assertEqual((got["state"], got["reason"]), ("canceled", "canceled by an operator"))
        got = self.ok("queue", "cancel", held["id"], "--json").json()
        self.assertEqual((got["id"], got["state"], got["reason"]),
                         (held["id"], "canceled", "canceled by an operator"))
        # the release let high in
        self.assertEqual(self.srv.claim_get(high["id"])["state"], "held")
        self.assertEqual(self.ok("queue", "list", "--lock", "sem/q-db").out.strip(),
                         "Nothing waits for that lock.")
        self.srv.release(high["id"])

    def test_claims_list_and_info(self):
        a = self.srv.claim("cl-alpha", [("m", "cl-m")], group="cl-g", tags={"env": "prod"},
                           lease="1m", priority=2)
        b = self.srv.claim("cl-beta", [("m", "cl-m")])
        names, rows = self.table("claims", "list", "--lock", "mtx/cl-m")
        self.assertEqual(names, ["CLAIM", "STATE", "HOLDER", "LOCKS", "PRIORITY", "CREATED",
                                 "EXPIRES", "REASON"])
        self.assertEqual([(r["CLAIM"], r["STATE"], r["HOLDER"], r["LOCKS"], r["PRIORITY"])
                          for r in rows],
                         [(a["id"], "held", "cl-alpha", "mtx/cl-m,mtx/group/cl-g", "2"),
                          (b["id"], "pending", "cl-beta", "mtx/cl-m", "0")])
        self.assertRegex(rows[0]["EXPIRES"], RFC3339)
        self.assertEqual(rows[1]["EXPIRES"], "-")
        _, rows = self.table("claims", "list", "--state", "pending", "--holder", "cl-beta")
        self.assertEqual([r["CLAIM"] for r in rows], [b["id"]])
        self.assertEqual(self.ok("claims", "list", "--holder", "cl-alpha", "--json").json(),
                         self.srv.get("/v1/claims?holder=cl-alpha").json)
        self.assertEqual(self.ok("claims", "list", "--holder", "nobody-at-all").out,
                         "No claims.\n")

        out = self.ok("claims", "info", a["id"]).out
        f = parse_fields(out)
        self.assertEqual((f["Claim"], f["State"], f["Holder"], f["Priority"], f["Lease"],
                          f["Timeout"], f["Group"], f["Tags"], f["Reason"]),
                         (a["id"], "held", "cl-alpha", "2", "1m", "none", "cl-g", "env=prod",
                          "held"))
        _, lrows = parse_table(out.split("\nLocks (2):\n")[1])
        self.assertEqual([(r["LOCK"], r["SLOTS"], r["TOKEN"], r["POSITION"]) for r in lrows],
                         [("mtx/cl-m", "1", "1", "-"), ("mtx/group/cl-g", "1", "1", "-")])
        out = self.ok("claims", "info", b["id"]).out
        _, lrows = parse_table(out.split("\nLocks (1):\n")[1])
        self.assertEqual([(r["TOKEN"], r["POSITION"]) for r in lrows], [("-", "1")])
        self.assertEqual(self.ok("claims", "info", a["id"], "--json").json(),
                         self.srv.claim_get(a["id"]))
        r = sluice(self.srv, "claims", "info", "AAAAAAAAAAAAAAAAAAAAAA")
        self.assertEqual(r.rc, 1, r)
        self.srv.release(a["id"])
        self.srv.release(b["id"])

    def test_claims_release_by_holder_prefix(self):
        a = self.srv.claim("run-42/a", [("m", "crp-m")])
        b = self.srv.claim("run-42/b", [("m", "crp-m")])
        x = self.srv.claim("run-43/x", [("m", "crp-x")])
        self.assertEqual((a["state"], b["state"], x["state"]), ("held", "pending", "held"))
        since = self.srv.events()["next"]
        self.assertEqual(self.ok("claims", "release", "--holder-prefix", "run-42/").out,
                         "released 1, withdrawn 1, canceled 0, skipped 0\n")
        self.assertEqual(self.srv.claim_get(a["id"])["state"], "released")
        self.assertEqual(self.srv.claim_get(b["id"])["state"], "withdrawn")
        self.assertEqual(self.srv.claim_get(x["id"])["state"], "held")
        # The pending one went first: it was never granted on the way out.
        evs = [(e["type"], e["claim"]) for e in self.srv.all_events(since)]
        self.assertNotIn(("claim.acquired", b["id"]), evs)
        # Nothing of the prefix is left: all three 0, in the server's own JSON.
        self.assertEqual(self.ok("--json", "claims", "release", "--holder-prefix=run-42/").json(),
                         {"released": 0, "withdrawn": 0, "canceled": 0, "skipped": 0})
        # A prefix with what a query must escape ('&' would start another
        # parameter, '#' end the URL, '+' read as a blank, '%' an escape).
        odd = "run-44/a b&c=d:e+f%g#h?"
        o = self.srv.claim(odd + "i", [("m", "crp-odd")])
        got = self.ok("claims", "release", "--holder-prefix", odd, "--json").json()
        self.assertEqual(got, {"released": 1, "withdrawn": 0, "canceled": 0, "skipped": 0})
        self.assertEqual(self.srv.claim_get(o["id"])["state"], "released")
        # Usage errors end nothing; a prefix the server refuses is its 400 (1).
        for args in (["claims", "release"], ["claims", "release", "--holder-prefix", ""],
                     ["claims", "release", "--holder-prefix="],
                     ["claims", "release", "--holder-prefix", "run-43/", "extra"],
                     ["claims", "release", "--holder-prefix", "run-43/", "--state", "held"],
                     ["claims", "list", "--holder-prefix", "run-43/"],
                     ["claims", "info", x["id"], "--holder-prefix", "run-43/"]):
            r = sluice(self.srv, *args)
            self.assertEqual(r.rc, 2, r)
            self.assertTrue(r.err.startswith("sluice: "), r)
            self.assertEqual(r.out, "", r)
        r = sluice(self.srv, "claims", "release")
        self.assertIn("--holder-prefix", r.err)
        r = sluice(self.srv, "claims", "release", "--holder-prefix", "r" * 254)
        self.assertEqual(r.rc, 1, r)
        self.assertIn("holder_prefix", r.err)
        self.assertEqual(self.srv.claim_get(x["id"])["state"], "held")
        self.srv.release(x["id"])

    # ---- events ------------------------------------------------------------------------

    def test_events_page(self):
        since = self.srv.events()["next"]
        c = self.srv.claim("ev-holder", [("m", "ev-m")])
        self.srv.release(c["id"])
        names, rows = self.table("events", "--since", str(since))
        self.assertEqual(names, ["SEQ", "TIME", "TYPE", "CLAIM", "HOLDER", "LOCKS", "ACTOR",
                                 "REASON"])
        self.assertEqual([(r["SEQ"], r["TYPE"], r["CLAIM"], r["HOLDER"], r["LOCKS"], r["ACTOR"])
                          for r in rows],
                         [(str(since + 1), "claim.queued", c["id"], "ev-holder", "mtx/ev-m",
                           "anonymous"),
                          (str(since + 2), "claim.acquired", c["id"], "ev-holder", "mtx/ev-m",
                           "anonymous"),
                          (str(since + 3), "claim.released", c["id"], "ev-holder",
                           "mtx/ev-m", "anonymous")])
        self.assertRegex(rows[0]["TIME"], RFC3339)
        page = self.ok("events", "--since", str(since), "--json").json()
        self.assertEqual(page, self.srv.events(since))
        # The latest --limit events, without --since.
        _, rows = self.table("events", "--limit", "2")
        self.assertEqual([r["TYPE"] for r in rows], ["claim.acquired", "claim.released"])
        # One claim's events.
        page = self.ok("events", "--claim", c["id"], "--json").json()
        self.assertEqual([e["type"] for e in page["events"]],
                         ["claim.queued", "claim.acquired", "claim.released"])

    def follow(self, *args):
        """sluice events --follow ARGS; returns (process, lines list, lock)."""
        p = start(self.srv, "events", "--follow", *args)
        self.addCleanup(lambda: (p.poll() is None and p.kill(), p.communicate()))
        lines = []

        def reader():
            for line in p.stdout:
                lines.append(line.decode())
        threading.Thread(target=reader, daemon=True).start()
        return p, lines

    def test_events_follow_json_lines(self):
        since = self.srv.events()["next"]
        p, lines = self.follow("--json", "--since", str(since))
        c = self.srv.claim("fol-holder", [("m", "fol-m")])
        self.srv.release(c["id"])
        wait_until(lambda: len(lines) >= 3, 15, what="three events on the stream")
        evs = [json.loads(l) for l in lines[:3]]
        self.assertEqual([(e["seq"], e["type"], e["claim"]) for e in evs],
                         [(since + 1, "claim.queued", c["id"]),
                          (since + 2, "claim.acquired", c["id"]),
                          (since + 3, "claim.released", c["id"])])
        p.send_signal(signal.SIGINT)
        p.wait(10)

    def test_events_follow_starts_now_without_since(self):
        old = self.srv.claim("fol-old", [("m", "fol-now")])
        self.srv.release(old["id"])
        p, lines = self.follow()
        # It starts where the log ends when it connects, which the test cannot
        # see: claims made from now on, one every 200 ms, until one shows up.
        made, last = [], [0.0]

        def seen():
            if time.monotonic() - last[0] > 0.2:
                c = self.srv.claim("fol-new", [("m", "fol-now")])
                self.srv.release(c["id"])
                made.append(c["id"])
                last[0] = time.monotonic()
            # The stream may begin in the middle of a claim's events (it
            # connected between its queued and released), so wait for a
            # claim seen from its first event to its last.
            queued = [c for c in made for l in list(lines)
                      if "claim.queued" in l and c in l]
            return [c for c in queued for l in list(lines)
                    if "claim.released" in l and c in l]
        cid = wait_until(seen, 15, what="a new claim's events")[0]
        self.assertFalse([l for l in lines if old["id"] in l], lines)
        first = [l for l in lines if cid in l][0]
        self.assertRegex(first, r"^\d+ +\d{4}-\d\d-\d\dT\S+Z  claim\.queued +%s  fol-new +"
                         r"mtx/fol-now +anonymous\n$" % re.escape(cid))
        acquired = [l for l in lines if "claim.acquired" in l and cid in l][0]
        self.assertRegex(acquired, r"^\d+ +\S+  claim\.acquired +%s  fol-new +mtx/fol-now +"
                         r"anonymous +granted\n$" % re.escape(cid))

    def test_events_follow_columns_have_fixed_widths(self):
        since = self.srv.events()["next"]
        p, lines = self.follow("--since", str(since))
        self.srv.sem_put("fw-sem", 2)
        long_holder = "a-holder-name-longer-than-24"
        for holder, locks in (("h", [("m", "fw")]),
                              ("a-longer-holder-name", [("m", "fw2"), ("m", "fw3")]),
                              ("mid-holder", [("s", "fw-sem")]),
                              (long_holder, [("m", "fw")]),
                              ("h2", [("m", "fw")])):
            c = self.srv.claim(holder, locks)
            self.srv.release(c["id"])
        wait_until(lambda: sum("claim.released" in l for l in lines) >= 5, 15,
                   what="five claims' events")
        rows = [l.rstrip("\n") for l in lines if "claim." in l]
        self.assertEqual(len(rows), 15, rows)

        def reason_at(row):
            for r in ("granted", "released by"):
                if r in row:
                    return row.index(r)
            return None
        # Up to the long holder, every column starts at the same offset, the
        # reason included (HOLDER and LOCKS are 24 wide, ACTOR 10).
        first = rows[:9]
        self.assertEqual({reason_at(r) for r in first if reason_at(r)},
                         {7 + 1 + 24 + 2 + 17 + 1 + 22 + 2 + 24 + 2 + 24 + 2 + 10 + 2},
                         "\n".join(first))
        self.assertEqual(len({r.index("  h" if "  h " in r else "  a-" if "  a-" in r else
                                      "  mid") for r in first}), 1, "\n".join(first))
        # The long holder is printed whole; HOLDER widens to it from then on.
        later = rows[9:]
        self.assertTrue(all(long_holder in r for r in later[:3]), later)
        self.assertEqual(len({reason_at(r) for r in later if reason_at(r)}), 1,
                         "\n".join(later))
        self.assertEqual(reason_at(later[1]),
                         7 + 1 + 24 + 2 + 17 + 1 + 22 + 2 + len(long_holder) + 2 + 24 + 2 +
                         10 + 2)

    # ---- what people see on a terminal ----------------------------------------------------

    def test_terminal_tables_bold_colour_and_relative_times(self):
        c = self.srv.claim("tty-holder", [("m", "tty-m")], lease="1m")
        t = Tty(self.srv, "claims", "list", "--holder", "tty-holder")
        rc, text, _, _ = t.finish()
        self.assertEqual(rc, 0, text)
        self.assertIn("\x1b[1mCLAIM\x1b[0m", text)           # bold header
        self.assertIn("\x1b[32mheld\x1b[0m", text)           # green held
        _, rows = parse_table(text)
        self.assertRegex(rows[0]["CREATED"], r"^(now|\d+s ago)$")
        self.assertRegex(rows[0]["EXPIRES"], r"^in (1m|5\ds)$")
        # NO_COLOR: no colour, still aligned and bold
        t = Tty(self.srv, "claims", "list", "--holder", "tty-holder",
                env=base_env(self.srv, NO_COLOR="1"))
        rc, text, _, _ = t.finish()
        self.assertEqual(rc, 0, text)
        self.assertNotIn("\x1b[32m", text)
        self.assertEqual(re.findall(r"\x1b\[(\d+)m", text).count("32"), 0)
        self.assertIn("\x1b[1mCLAIM", text)
        # Not a terminal: no escapes at all
        out = self.ok("claims", "list", "--holder", "tty-holder").out
        self.assertNotIn("\x1b", out)
        self.srv.release(c["id"])

    # ---- help and errors ---------------------------------------------------------------------

    def test_help(self):
        r = self.ok("--help")
        for cmd in COMMANDS:
            self.assertRegex(r.out, r"\n  %s +" % cmd)
        self.assertIn("Examples:", r.out)
        for cmd in COMMANDS:
            r = self.ok(cmd, "--help")
            self.assertIn("Usage: sluice %s" % ("sem" if cmd == "pools" else cmd), r.out)
            self.assertIn("Example", r.out)
            self.assertEqual(self.ok("help", cmd).out, r.out)
        self.assertIn("125", self.ok("run", "--help").out)
        self.assertEqual(self.ok("--version").out.split()[0], "sluice")
        r = sluice(self.srv)
        self.assertEqual(r.rc, 2, r)
        self.assertIn("Usage: sluice", r.err)

    def test_usage_errors_exit_2(self):
        for args in (["frobnicate"], ["sem", "set", "x"], ["sem", "set", "x", "many"],
                     ["sem", "bogus"], ["sem", "info"], ["sem", "list", "--strategy", "skip"],
                     ["sem", "set", "x", "1", "--strategy", "fastest"], ["queue", "why"],
                     ["queue", "list", "--lock", "deploy"], ["claims", "info"],
                     ["claims", "list", "extra"], ["events", "--since", "-1"],
                     ["events", "--limit", "0"], ["status", "--bogus"], ["mutex", "rm", "x"],
                     ["release"]):
            r = sluice(self.srv, *args)
            self.assertEqual(r.rc, 2, r)
            self.assertTrue(r.err.startswith("sluice: "), r)
            self.assertEqual(r.out, "", r)

    def test_negative_number_is_a_value_not_a_flag(self):
        r = sluice(self.srv, "sem", "set", "neg-e2", "-1")
        self.assertEqual(r.rc, 2, r)
        self.assertIn("LIMIT must be a whole number from 0 to 1000000000, not '-1'", r.err)
        self.assertEqual(self.srv.get("/v1/semaphores/neg-e2").status, 404)
        # a single dash and letters is still an unknown flag
        r = sluice(self.srv, "sem", "set", "neg-e2", "-x")
        self.assertEqual(r.rc, 2, r)
        self.assertIn("unknown flag '-x'", r.err)

    def test_unreachable_server_exits_3_and_says_what_to_do(self):
        url = "http://127.0.0.1:%d" % free_port()
        for args in (["status"], ["sem", "list"], ["queue", "list"], ["events"]):
            r = sluice(None, "--server", url, *args)
            self.assertEqual(r.rc, 3, r)
            self.assertIn("Is sluiced running at %s?" % url, r.err)
        r = sluice(None, "status", env=base_env(None, SLUICE_SERVER=url))
        self.assertEqual(r.rc, 3, r)
        self.assertIn(url, r.err)

    # ---- the README ------------------------------------------------------------------------------

    def test_readme_example(self):
        """The three lines right after the README's first code block, run as
        shown (the first line's build is replaced by the binary under test)."""
        with open(README) as f:
            text = f.read()
        blocks = re.findall(r"```[a-z]*\n(.*?)```", text, re.S)
        self.assertEqual(blocks[0].splitlines()[0].split()[0], "./scripts/run")
        self.assertEqual(blocks[0].splitlines()[1].split()[0], "./scripts/test")
        # It comes right after the first block: only a line of prose between them.
        between = text.split("```", 3)[2]
        self.assertFalse([l for l in between.splitlines() if l.startswith("#")], between)
        self.assertLessEqual(len([l for l in between.splitlines() if l.strip()]), 2, between)
        lines = [l for l in blocks[1].splitlines() if l.strip()]
        self.assertEqual(len(lines), 3, lines)
        self.assertIn('export PATH="$PWD/build/release/src/cli:$PATH"', lines[0])
        self.assertTrue(lines[1].startswith("sluice run --mutex "), lines[1])
        self.assertTrue(lines[2].startswith("sluice queue list"), lines[2])
        env = base_env(self.srv)
        env["PATH"] = os.path.dirname(sluice_bin()) + os.pathsep + env["PATH"]
        p = subprocess.run(["sh", "-ec", "\n".join(lines[1:])], env=env, capture_output=True,
                           text=True, timeout=30)
        self.assertEqual(p.returncode, 0, p)
        self.assertIn("Nothing waits.", p.stdout)


class TokenNewTest(ServerTestCase):
    """`sluice token new`: a random secret, and the entry for the file with
    only its SHA-256, which the server then admits the secret by."""

    CONFIG = """
tokens:
  - name: admin
    token: "adm-secret-0123456789"
    admin: true
"""
    TOKEN = "adm-secret-0123456789"

    def reload(self, text):
        with open(self.srv.config_path, "w") as f:
            f.write(text)
        before = self.srv.stderr().count(" read again: ")
        self.srv.proc.send_signal(signal.SIGHUP)
        wait_until(lambda: self.srv.stderr().count(" read again: ") > before, 10,
                   what="the reload")

    def test_the_entry_admits_the_secret(self):
        r = sluice(None, "token", "new", "team-z", "--prefix", "team-z/", "--prefix", "tag/t=z")
        self.assertEqual(r.rc, 0, r)
        secret, *entry = r.out.splitlines()
        self.assertRegex(secret, r"^[0-9a-f]{64}$")
        self.assertEqual(entry, [
            '  - name: "team-z"',
            '    token_sha256: "%s"' % hashlib.sha256(secret.encode()).hexdigest(),
            '    prefixes: ["team-z/", "tag/t=z"]'])
        self.assertIn("store it now", r.err)
        again = sluice(None, "token", "new", "team-z", "--prefix", "team-z/").out.splitlines()[0]
        self.assertNotEqual(again, secret)
        self.reload(self.CONFIG + "\n".join(entry) + "\n")
        env = base_env(self.srv, SLUICE_TOKEN=secret)
        self.assertEqual(sluice(self.srv, "sem", "set", "team-z/db", "1", env=env).rc, 0)
        r = sluice(self.srv, "sem", "set", "team-y/db", "1", env=env)
        self.assertEqual(r.rc, 1, r)
        self.assertIn("This token may not do that", r.err)

    def test_admin_entry(self):
        r = sluice(None, "token", "new", "ops", "--admin")
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(r.out.splitlines()[1:], [
            '  - name: "ops"',
            '    token_sha256: "%s"' % hashlib.sha256(r.out.split()[0].encode()).hexdigest(),
            '    admin: true'])

    def test_usage_errors(self):
        for args in (["token"], ["token", "old", "x"], ["token", "new"],
                     ["token", "new", "x"], ["token", "new", "x", "--admin", "--prefix", "a/"],
                     ["token", "new", "x", "--prefix", "a b"], ["--json", "token", "new", "x",
                                                               "--admin"],
                     ["token", "new", "sluice", "--admin"],
                     ["token", "new", "anonymous", "--prefix", "a/"]):
            r = sluice(None, *args)
            self.assertEqual(r.rc, 2, r)
            self.assertEqual(r.out, "", r)
            self.assertIn("sluice token", r.err)


class TokenTest(ServerTestCase):
    """A server with tokens: --token and SLUICE_TOKEN are sent, and a missing
    one is a 401 with a hint."""

    CONFIG = """
tokens:
  - name: admin
    token: "adm-secret-0123456789"
    admin: true
  - name: team-a
    token: "a-secret-0123456789"
    prefixes: ["team-a/"]
  - name: team-a-jobs
    token: "jobs-secret-0123456789"
    claim: ["team-a/"]
"""
    TOKEN = "adm-secret-0123456789"

    def test_claims_release_leaves_what_the_token_may_not_end(self):
        """It is left alone and not counted: skipped is 0 (F8)."""
        adm = base_env(self.srv, SLUICE_TOKEN="adm-secret-0123456789")
        mine = self.srv.claim("run-9/a", [("m", "team-a/rp")])
        other = self.srv.claim("run-9/b", [("m", "team-b/rp")])
        r = sluice(self.srv, "--token", "a-secret-0123456789", "claims", "release",
                   "--holder-prefix", "run-9/")
        self.assertEqual((r.rc, r.out), (0, "released 1, withdrawn 0, canceled 0, skipped 0\n"), r)
        got = sluice(self.srv, "claims", "info", other["id"], "--json", env=adm).json()
        self.assertEqual(got["state"], "held")
        got = sluice(self.srv, "claims", "info", mine["id"], "--json", env=adm).json()
        self.assertEqual(got["state"], "released")
        r = sluice(self.srv, "claims", "release", "--holder-prefix", "run-9/", "--json", env=adm)
        self.assertEqual(r.json(), {"released": 1, "withdrawn": 0, "canceled": 0, "skipped": 0})

    def test_queue_clear_needs_the_operate_permission_and_says_so(self):
        # F7: prefixes give operate; a claim-only token is told the
        # permission it lacks, not to widen its prefixes.
        r = sluice(self.srv, "--token", "a-secret-0123456789", "queue", "clear", "sem/team-a/db")
        self.assertEqual((r.rc, r.out), (0, "canceled 0\n"), r)
        r = sluice(self.srv, "--token", "jobs-secret-0123456789", "queue", "clear", "sem/team-a/db")
        self.assertEqual(r.rc, 1, r)
        self.assertIn("needs the operate permission", r.err)
        self.assertIn("This token lacks that permission there", r.err)
        self.assertNotIn("prefixes cover", r.err)

    def test_a_limited_token_needs_a_holder_under_its_prefixes(self):
        # F12: the default holder (USER@HOST:PID) is outside team-a/; the
        # hint says how to give one, not to change the token.
        r = sluice(self.srv, "run", "--token", "a-secret-0123456789", "--mutex", "team-a/h", "--",
                   "true")
        self.assertEqual(r.rc, 121, r)
        self.assertIn('must start with one of "team-a/"', r.err)
        self.assertIn("--holder or SLUICE_HOLDER", r.err)
        self.assertNotIn("prefixes cover", r.err)
        r = sluice(self.srv, "run", "--token", "a-secret-0123456789", "--holder", "team-a/run-1/h",
                   "--mutex", "team-a/h", "--", "true")
        self.assertEqual(r.rc, 0, r)

    def test_token_flag_and_environment(self):
        r = sluice(self.srv, "sem", "list")
        self.assertEqual(r.rc, 1, r)
        self.assertIn("--token or SLUICE_TOKEN", r.err)
        r = sluice(self.srv, "--token", "adm-secret-0123456789", "sem", "set", "tok-db", "1")
        self.assertEqual(r.rc, 0, r)
        r = sluice(self.srv, "sem", "list", "--json",
                   env=base_env(self.srv, SLUICE_TOKEN="adm-secret-0123456789"))
        self.assertEqual(r.rc, 0, r)
        self.assertEqual([s["name"] for s in r.json()["semaphores"]], ["tok-db"])
        r = sluice(self.srv, "run", "--token", "adm-secret-0123456789", "--mutex", "tok-m", "--",
                   "true")
        self.assertEqual(r.rc, 0, r)
        r = sluice(self.srv, "run", "--mutex", "tok-m", "--", "true")
        self.assertEqual(r.rc, 121, r)


class PermissionHintTest(ServerTestCase):
    """F7: a limited token may not change a semaphore the file lists, nor
    ask a priority above its max_priority; each hint says what to do."""

    CONFIG = """
tokens:
  - {name: admin, token: "adm-secret-0123456789", admin: true}
  - {name: team-a, token: "a-secret-0123456789", prefixes: ["team-a/"], max_priority: 5}
semaphores:
  - {name: team-a/file, limit: 1}
"""
    TOKEN = "adm-secret-0123456789"

    def test_the_file_s_semaphores_and_max_priority_say_what_to_do(self):
        r = sluice(self.srv, "--token", "a-secret-0123456789", "sem", "set", "team-a/file", "3")
        self.assertEqual(r.rc, 1, r)
        self.assertIn("managed by the configuration file", r.err)
        self.assertIn("Change it in the server's configuration file", r.err)
        run = ["run", "--token", "a-secret-0123456789", "--holder", "team-a/p", "--mutex",
               "team-a/p"]
        r = sluice(self.srv, *run, "--priority", "6", "--", "true")
        self.assertEqual(r.rc, 121, r)
        self.assertIn("above this token's max_priority, 5", r.err)
        self.assertIn("Ask a lower --priority", r.err)
        r = sluice(self.srv, *run, "--priority", "5", "--", "true")
        self.assertEqual(r.rc, 0, r)


if __name__ == "__main__":
    main()
