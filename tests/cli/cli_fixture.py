"""cli_fixture.py - runs the `sluice` command against a real sluiced.

The server comes from tests/server/sluiced_fixture.py (imported, not
copied): a free loopback port, a temporary SQLite store, /healthz before
the first test. This module adds what the CLI tests share: the binary
($SLUICE_BIN, set by CTest), running it with SLUICE_SERVER pointing at the
test's server, starting it in the background, giving it a terminal (a pty)
when a test wants to see what people see, and reading its aligned tables
back by column.

No test sleeps to wait for state: each waits, with a deadline, for what
the server or the commands report (wait_until, a claim's long poll, a
line on a pty, a file the command writes).
"""
import json
import os
import pty
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "server"))

import sluiced_fixture  # noqa: E402
from sluiced_fixture import ServerTestCase, Sluiced, free_port, wait_until  # noqa: E402,F401

DEFAULT_SLUICE = os.path.join(HERE, "..", "..", "build", "release", "src", "cli", "sluice")
CMD_TIMEOUT_S = 30.0

# run's statuses (docs/cli.md)
RUN_USAGE, RUN_REFUSED, RUN_UNREACHABLE, RUN_TIMEOUT = 120, 121, 122, 123
RUN_ENDED, RUN_REVOKED, RUN_NOEXEC, RUN_NOTFOUND = 124, 125, 126, 127

ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def sluice_bin():
    return os.environ.get("SLUICE_BIN") or DEFAULT_SLUICE


def main():
    """unittest.main() after checking both binaries exist."""
    if not os.path.isfile(sluice_bin()):
        sys.stderr.write("sluice not found at %s; set SLUICE_BIN\n" % sluice_bin())
        sys.exit(2)
    sluiced_fixture.main()


def base_env(srv=None, **extra):
    """The environment for sluice: the test's server, no inherited SLUICE_*
    or NO_COLOR, fast retries; extra values override (None removes)."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("SLUICE_") and k != "NO_COLOR"}
    env["SLUICE_BIN"] = sluice_bin()
    if srv is not None:
        env["SLUICE_SERVER"] = "http://127.0.0.1:%d" % srv.port
    env["SLUICE_CLAIM_POLL_INTERVAL"] = "100ms"
    env["SLUICE_CLAIM_POLL_JITTER"] = "50ms"
    env["TERM"] = "xterm"
    for k, v in extra.items():
        if v is None:
            env.pop(k, None)
        else:
            env[k] = v
    return env


class Result:
    def __init__(self, args, rc, out, err):
        self.args, self.rc, self.out, self.err = args, rc, out, err

    def __repr__(self):
        return "<sluice %s: rc %s\n--- stdout\n%s--- stderr\n%s>" % (
            " ".join(self.args), self.rc, self.out, self.err)

    def json(self):
        return json.loads(self.out)


def sluice(srv, *args, env=None, timeout=CMD_TIMEOUT_S, cwd=None):
    """Runs sluice to the end; returns a Result (stdout, stderr as text)."""
    p = subprocess.run([sluice_bin()] + list(args), env=env or base_env(srv),
                       stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=timeout, cwd=cwd)
    return Result(list(args), p.returncode, p.stdout.decode("utf-8", "replace"),
                  p.stderr.decode("utf-8", "replace"))


def start(srv, *args, env=None, **kw):
    """sluice in the background (a Popen with stdout and stderr piped)."""
    return subprocess.Popen([sluice_bin()] + list(args), env=env or base_env(srv),
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, **kw)


def finish(p, timeout=CMD_TIMEOUT_S):
    """Waits for a background sluice; returns a Result."""
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        out, err = stop(p)
        raise AssertionError("sluice %s did not finish within %.0f s:\n%s\n%s"
                             % (p.args, timeout, out.decode(errors="replace"),
                                err.decode(errors="replace")))
    return Result(p.args[1:], p.returncode, out.decode("utf-8", "replace"),
                  err.decode("utf-8", "replace"))


class Tty:
    """sluice with stdout and/or stderr on a pseudo-terminal, so that it
    behaves as for a person (progress line, bold, colour, relative times).
    What it writes to the terminal is collected by a thread."""

    def __init__(self, srv, *args, env=None, stdout_tty=True, stderr_tty=True):
        self.master, slave = pty.openpty()
        self.buf = b""
        self.lock = threading.Lock()
        self.proc = subprocess.Popen(
            [sluice_bin()] + list(args), env=env or base_env(srv), stdin=subprocess.DEVNULL,
            stdout=slave if stdout_tty else subprocess.PIPE,
            stderr=slave if stderr_tty else subprocess.PIPE)
        os.close(slave)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        # Until EIO: every process holding the terminal has gone.
        while True:
            try:
                data = os.read(self.master, 4096)
            except OSError:
                return
            if not data:
                return
            with self.lock:
                self.buf += data

    def text(self):
        with self.lock:
            return self.buf.decode("utf-8", "replace")

    def wait_for(self, pattern, deadline_s=15.0):
        """Waits until the terminal shows text matching pattern (a regex)."""
        rx = re.compile(pattern)
        return wait_until(lambda: rx.search(self.text()), deadline_s,
                          what="terminal output matching %r (got %r)" % (pattern, self.text()))

    def finish(self, timeout=CMD_TIMEOUT_S):
        rc = self.proc.wait(timeout=timeout)
        self.reader.join(5)
        os.close(self.master)
        out = err = ""
        if self.proc.stdout:
            out = self.proc.stdout.read().decode()
            self.proc.stdout.close()
        if self.proc.stderr:
            err = self.proc.stderr.read().decode()
            self.proc.stderr.close()
        return rc, self.text(), out, err


def parse_table(text):
    """Reads an aligned table back: the header's words give the columns'
    start offsets; every row's cells are cut at those offsets. A table
    whose rows are not aligned with its header reads back wrong, which is
    what the tests compare against. Returns (headers, [dict per row])."""
    lines = [ANSI.sub("", l).rstrip("\r") for l in text.splitlines()]
    lines = [l for l in lines if l.strip()]
    header = lines[0]
    starts = [m.start() for m in re.finditer(r"\S+", header)]
    names = header.split()
    rows = []
    for line in lines[1:]:
        cells = []
        for i, s in enumerate(starts):
            end = starts[i + 1] if i + 1 < len(starts) else len(line)
            # a cell never starts mid-word: the character before it is a blank
            if s > 0 and s <= len(line) and line[s - 1] != " ":
                raise AssertionError("row not aligned with the header at column %s:\n%s\n%s"
                                     % (names[i], header, line))
            cells.append(line[s:end].strip())
        rows.append(dict(zip(names, cells)))
    return names, rows


def parse_fields(text):
    """'Key:  value' lines (up to the first blank line) as a dict."""
    out = {}
    for line in ANSI.sub("", text).splitlines():
        if not line.strip():
            break
        k, _, v = line.partition(":")
        out[k.strip()] = v.strip()
    return out


def tmpdir(test):
    d = tempfile.mkdtemp(prefix="sluice-cli-")
    test.addCleanup(lambda: subprocess.run(["rm", "-rf", d]))
    return d


def kill_tree(p, grace=5):
    """Stops a background process that leads a process group of its own
    (start_new_session) with every process of that group, and returns what
    it wrote (stdout, stderr: bytes, b"" for one not piped). Killing the
    leader alone would leave its children (sluice run's command, a shell's
    commands) holding its pipes, and reading them to their end would wait
    as long as those run; what still holds them after `grace` seconds (a
    process that left the group) is not waited for."""
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    return _collect(p, grace)


def stop(p, grace=5):
    """Stops a background process, with its group when it leads one (see
    kill_tree); returns what it wrote."""
    try:
        leads = p.returncode is None and os.getpgid(p.pid) == p.pid
    except ProcessLookupError:
        leads = False
    if leads:
        return kill_tree(p, grace)
    p.kill()
    return _collect(p, grace)


def _collect(p, grace):
    try:
        out, err = p.communicate(timeout=grace)
    except subprocess.TimeoutExpired as e:
        out, err = e.stdout, e.stderr
    return out or b"", err or b""


def pid_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie is dead for our purposes
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def now():
    return time.monotonic()
