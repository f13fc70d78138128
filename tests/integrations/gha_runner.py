"""gha_runner.py - runs a composite GitHub Action the way the runner does.

What GitHub's runner does for `uses: ./integrations/github-action` with
`with:` inputs, reduced to what a composite action of shell steps sees:
inputs (their defaults, then `with:`), `${{ inputs.* }}`, `${{ github.* }}`
and `${{ steps.ID.outputs.* }}` substituted in `env`, `run`,
`working-directory` and the outputs; each step run by
`bash --noprofile --norc -eo pipefail FILE` with GITHUB_ACTION_PATH,
GITHUB_PATH, GITHUB_OUTPUT, RUNNER_TEMP and RUNNER_TOOL_CACHE; lines a step
appends to GITHUB_PATH put first on PATH for the next steps, and
`name=value` lines in GITHUB_OUTPUT become the step's outputs. A step that
fails stops the action, as in a job. Each step's output begins with a line
naming it (as GitHub's log shows "Run ..."), so that a run that overran its
time says which step it was in.
"""
import json
import os
import re
import subprocess
import tempfile

import yaml

EXPR = re.compile(r"\$\{\{\s*([^}]*?)\s*\}\}")
# The line the runner writes as a step begins (as GitHub's log shows "Run ...").
STEP_LINE = re.compile(r"^##\[runner\] step (.*) begins$", re.M)


class ActionResult:
    def __init__(self, rc, out, outputs):
        self.rc, self.out, self.outputs = rc, out, outputs

    def __repr__(self):
        return "<action rc %s outputs %r\n%s>" % (self.rc, self.outputs, self.out)


class ActionRun:
    """One use of the action in a job step: start() then finish(), or run()."""

    def __init__(self, action_dir, with_inputs, env, github, work_dir):
        """work_dir is the job's workspace (GITHUB_WORKSPACE)."""
        with open(os.path.join(action_dir, "action.yml"), encoding="utf-8") as f:
            self.action = yaml.safe_load(f)
        self.dir = os.path.abspath(action_dir)
        self.env = dict(env)
        self.github = dict(github)
        self.work = work_dir
        self.temp = tempfile.mkdtemp(prefix="runner-temp-", dir=work_dir)
        self.tool_cache = self.env.get("RUNNER_TOOL_CACHE") or os.path.join(work_dir, "toolcache")
        os.makedirs(self.tool_cache, exist_ok=True)
        unknown = set(with_inputs) - set(self.action.get("inputs", {}))
        if unknown:
            raise AssertionError("inputs the action does not declare: %s" % sorted(unknown))
        self.inputs = {}
        for name, spec in self.action.get("inputs", {}).items():
            if name in with_inputs:
                self.inputs[name] = str(with_inputs[name])
            elif spec.get("required") and "default" not in spec:
                raise AssertionError("required input %s not given" % name)
            else:
                self.inputs[name] = self.expand(str(spec.get("default", "")), {})
        self.log = os.path.join(self.temp, "log")
        self.proc = None
        # What a run that overran its time adds to its failure (the server's log).
        self.diagnose = None

    def expand(self, text, steps):
        def value(m):
            expr = m.group(1)
            scope, _, rest = expr.partition(".")
            if scope == "inputs":
                return self.inputs[rest]
            if scope == "github":
                return str(self.github[rest])
            if scope == "steps":
                sid, _, out = rest.partition(".outputs.")
                return steps.get(sid, {}).get(out, "")
            raise AssertionError("expression the runner stand-in does not know: %s" % expr)
        return EXPR.sub(value, text)

    def run(self, timeout=60):
        self.start()
        return self.finish(timeout)

    def start(self):
        """Runs the steps in a child process (this file, run as a script),
        so that a test can have two actions running at once."""
        self.proc = subprocess.Popen(
            [os.environ.get("PYTHON", "python3"), __file__, self._plan()],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            start_new_session=True)
        return self

    def _plan(self):
        plan = {"dir": self.dir, "action": self.action, "inputs": self.inputs,
                "github": self.github, "env": self.env, "temp": self.temp,
                "tool_cache": self.tool_cache, "work": self.work}
        path = os.path.join(self.temp, "plan.json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(plan, f)
        return path

    def kill(self):
        """Stops a run a failed test left behind, with every process of its
        steps (the run has a process group of its own); returns what it
        wrote."""
        if self.proc is None:
            return b""
        from cli_fixture import stop  # the test's (tests/cli is on its path), not the runner's
        return stop(self.proc)[0]

    def finish(self, timeout=60):
        try:
            out, _ = self.proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            # The steps' processes too: the runner's alone would leave them
            # holding its output, and reading it would wait as long as they run.
            text = self.kill().decode("utf-8", "replace")
            steps = STEP_LINE.findall(text)
            raise AssertionError("the action did not finish within %d s; %s:\n%s%s"
                                 % (timeout, "step %s hung" % steps[-1] if steps else
                                    "no step had begun", text,
                                    self.diagnose() if self.diagnose else ""))
        text = out.decode("utf-8", "replace")
        outputs = {}
        path = os.path.join(self.temp, "outputs.json")
        if os.path.exists(path):
            with open(path, encoding="utf-8") as f:
                outputs = json.load(f)
        return ActionResult(self.proc.returncode, text, outputs)


def _execute(plan):
    """The runner's part, in its own process: the steps in order."""
    run = ActionRun.__new__(ActionRun)
    run.dir, run.action, run.inputs = plan["dir"], plan["action"], plan["inputs"]
    run.github, run.temp, run.tool_cache = plan["github"], plan["temp"], plan["tool_cache"]
    env = dict(plan["env"])
    env.update({"GITHUB_ACTION_PATH": run.dir, "GITHUB_WORKSPACE": plan["work"], "RUNNER_TEMP": run.temp,
                "RUNNER_TOOL_CACHE": run.tool_cache, "GITHUB_ACTIONS": "true", "CI": "true"})
    path_file = os.path.join(run.temp, "path")
    open(path_file, "w").close()
    steps = {}
    rc = 0
    for i, step in enumerate(run.action["runs"]["steps"]):
        out_file = os.path.join(run.temp, "output.%d" % i)
        open(out_file, "w").close()
        step_env = dict(env)
        step_env["GITHUB_PATH"] = path_file
        step_env["GITHUB_OUTPUT"] = out_file
        for k, v in (step.get("env") or {}).items():
            step_env[k] = run.expand(str(v), steps)
        script = os.path.join(run.temp, "step.%d.sh" % i)
        with open(script, "w", encoding="utf-8") as f:
            f.write(run.expand(step["run"], steps) + "\n")
        cwd = run.expand(step.get("working-directory", "."), steps)
        cwd = os.path.join(plan["work"], cwd)
        assert step.get("shell") == "bash", "a composite step needs shell: bash"
        print("##[runner] step %d (%s) begins" % (i + 1, step.get("name", "unnamed")), flush=True)
        rc = subprocess.call(["bash", "--noprofile", "--norc", "-eo", "pipefail", script],
                             env=step_env, cwd=cwd)
        with open(path_file, encoding="utf-8") as f:
            added = [line.strip() for line in f if line.strip()]
        env["PATH"] = ":".join(list(reversed(added)) + [env["PATH"]])
        open(path_file, "w").close()
        outs = {}
        with open(out_file, encoding="utf-8") as f:
            for line in f:
                if "=" in line:
                    k, _, v = line.rstrip("\n").partition("=")
                    outs[k] = v
        if step.get("id"):
            steps[step["id"]] = outs
        if rc != 0:
            break
    outputs = {name: run.expand(spec["value"], steps)
               for name, spec in (run.action.get("outputs") or {}).items()}
    with open(os.path.join(run.temp, "outputs.json"), "w", encoding="utf-8") as f:
        json.dump(outputs, f)
    return rc


if __name__ == "__main__":
    import sys
    with open(sys.argv[1], encoding="utf-8") as f:
        sys.exit(_execute(json.load(f)))
