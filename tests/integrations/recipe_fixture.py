"""recipe_fixture.py - what the integration recipes' tests share.

Each recipe under integrations/ is a file a user copies into another
system (a GitHub Action, a .gitlab-ci.yml, a Jenkinsfile, a Tekton Task, an
Argo WorkflowTemplate, a Dagster or Airflow module). Those systems do not
run here; what they would run does: the recipes' shell commands and Python,
unchanged, against a real sluiced (tests/server/sluiced_fixture.py), with
`sluice` on PATH as a CI image would have it. The host system's part is
reduced to what it hands the commands: its variables and parameters,
substituted as it substitutes them.

Tests wait on what the server reports (claims' states, with deadlines),
never on time.
"""
import json
import os
import subprocess
import sys
import tempfile
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
INTEGRATIONS = os.path.join(ROOT, "integrations")
sys.path.insert(0, os.path.join(ROOT, "tests", "server"))
sys.path.insert(0, os.path.join(ROOT, "tests", "cli"))

from cli_fixture import main, sluice_bin, stop  # noqa: E402,F401 (the CLI tests' own)
from sluiced_fixture import ServerTestCase, wait_until  # noqa: E402,F401

DEADLINE_S = 30.0


def recipe(*parts):
    """The path of a recipe file under integrations/."""
    return os.path.join(INTEGRATIONS, *parts)


def base_env(srv, with_sluice=True, **extra):
    """An environment like a CI job's: no inherited SLUICE_*, the test's
    server in SLUICE_SERVER, and the sluice command on PATH."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLUICE_")}
    path = [p for p in env.get("PATH", "/usr/bin:/bin").split(":")
            if not os.path.exists(os.path.join(p, "sluice"))]
    if with_sluice:
        path.insert(0, os.path.dirname(os.path.abspath(sluice_bin())))
    env["PATH"] = ":".join(path)
    if srv is not None:
        env["SLUICE_SERVER"] = "http://127.0.0.1:%d" % srv.port
    env["SLUICE_CLAIM_POLL_INTERVAL"] = "100ms"
    env["SLUICE_CLAIM_POLL_JITTER"] = "50ms"
    for k, v in extra.items():
        if v is None:
            env.pop(k, None)
        else:
            env[k] = str(v)
    return env


def tmpdir(test):
    d = tempfile.mkdtemp(prefix="sluice-recipe-")
    test.addCleanup(lambda: subprocess.run(["rm", "-rf", d], check=False))
    return d


def claims_of(srv, holder, state=None):
    """The claims of one holder the server reports (every state, or one)."""
    q = {"holder": holder}
    if state:
        q["state"] = state
    r = srv.get("/v1/claims?" + urllib.parse.urlencode(q))
    assert r.status == 200, r
    return r.json["claims"]


def wait_claim(srv, holder, state, what=None):
    """Waits until the holder has a claim in that state; returns it."""
    found = wait_until(lambda: claims_of(srv, holder, state), DEADLINE_S,
                       what=what or "a %s claim of %s" % (state, holder))
    return found[0]


def lock_names(claim):
    """{"mtx/NAME" or "sem/NAME": token} of a claim's locks."""
    return {("mtx/" if lk["kind"] == "mutex" else "sem/") + lk["name"]: lk["token"]
            for lk in claim["locks"]}


def wait_file(path, what=None):
    wait_until(lambda: os.path.exists(path), DEADLINE_S, what=what or path)


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def dump(obj):
    return json.dumps(obj, indent=1, sort_keys=True)


class Job:
    """A CI job's script running in the background, in a process group of
    its own (so a failed test can stop it whole)."""

    def __init__(self, test, argv, env, cwd):
        self.proc = subprocess.Popen(argv, env=env, cwd=cwd, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        test.addCleanup(self.kill)
        self.rc, self.out = None, ""

    def kill(self):
        """Stops the job whole (cli_fixture.stop); returns what it wrote."""
        return stop(self.proc)[0]

    def finish(self, timeout=DEADLINE_S):
        try:
            out, _ = self.proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            out = self.kill()
            raise AssertionError("%s did not finish within %.0f s:\n%s"
                                 % (self.proc.args, timeout, out.decode("utf-8", "replace")))
        self.rc, self.out = self.proc.returncode, out.decode("utf-8", "replace")
        return self

    def __repr__(self):
        return "<job %s: rc %s\n%s>" % (self.proc.args, self.rc, self.out)


def write_exec(path, text):
    """A script file a job runs (the user's own ./deploy.sh and such)."""
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    os.chmod(path, 0o755)
    return path
