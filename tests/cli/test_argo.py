"""test_argo.py - `sluice import argo` and `sluice argo flags` (coming from
Argo Workflows), against a real sluiced.

Covers: Argo semaphore ConfigMaps printed as a sluiced.yaml fragment (the
text exactly, and loaded by a real `sluiced --config`), --apply against the
server (read back with GET /v1/semaphores/NAME), --json, several documents,
kind: List, standard input, the namespace rules, both ways of giving a
strategy, every input error (exit 2, FILE:LINE:COLUMN and what to change),
a refused and an unreachable server (1, 3); real inputs (a kubectl List with
kube-root-ca.crt and Argo's own ConfigMaps: keys without a number skipped
with a warning, --configmap); sluice's strategy keys only with
--strategy-keys; `argo flags` for the workflow's and a template's block in
Argo's old and new forms, which level each is (the workflow-level warning
and its acquire/release commands), database locks, the workflow's
priority, rebalanceKey, unknown keys (with "did you mean"), quoting of Argo
expressions (with the warning), --json, CronWorkflows, its errors, and
`sluice run` with the printed flags holding those very locks on the
server.

The sample manifests are in tests/cli/argo/, in Argo's own formats.
"""
import json
import os
import subprocess

from cli_fixture import (ServerTestCase, Sluiced, base_env, free_port, main, sluice, sluice_bin,
                         tmpdir)
from sluiced_fixture import q

HERE = os.path.dirname(os.path.abspath(__file__))
ARGO = os.path.join(HERE, "argo")
CONFIGMAP = os.path.join(ARGO, "configmap.yaml")
WORKFLOW = os.path.join(ARGO, "workflow.yaml")
CRON = os.path.join(ARGO, "cron-workflow.yaml")
LIST = os.path.join(ARGO, "list.yaml")
KUBECTL_LIST = os.path.join(ARGO, "kubectl-list.yaml")
MULTI = os.path.join(ARGO, "multi.yaml")

USAGE = 2

CONFIGMAP_FRAGMENT = (
    "semaphores:\n"
    '  - {name: "argo/ConfigMap/my-config/workflow", limit: 1, strategy: strict}\n'
    '  - {name: "argo/ConfigMap/my-config/template", limit: 2, strategy: strict}\n')


def configmap(data, name="c", namespace="ns"):
    """A ConfigMap's YAML with the given data lines (already indented)."""
    meta = "  name: %s\n" % name
    if namespace:
        meta += "  namespace: %s\n" % namespace
    return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n%sdata:\n%s" % (meta, data)


class ArgoTest(ServerTestCase):

    def ok(self, *args, **kw):
        r = sluice(self.srv, *args, **kw)
        self.assertEqual(r.rc, 0, r)
        return r

    def write(self, text, name="in.yaml"):
        path = os.path.join(tmpdir(self), name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def stdin(self, text, *args):
        p = subprocess.run([sluice_bin()] + list(args), env=base_env(self.srv),
                           input=text.encode(), capture_output=True, timeout=30)
        return p.returncode, p.stdout.decode(), p.stderr.decode()

    def fails(self, args, where, *phrases):
        """Exit 2, nothing on stdout, and one message on stderr that starts
        with `sluice: WHERE` and holds every phrase."""
        r = sluice(self.srv, *args)
        self.assertEqual(r.rc, USAGE, r)
        self.assertEqual(r.out, "", r)
        self.assertTrue(r.err.startswith("sluice: " + where), r)
        for p in phrases:
            self.assertIn(p, r.err)
        return r

    def semaphore(self, name, srv=None):
        r = (srv or self.srv).get("/v1/semaphores/" + q(name))
        self.assertEqual(r.status, 200, r)
        return r.json["limit"], r.json["strategy"]

    # ---- import: printing --------------------------------------------------------

    def test_configmap_prints_a_fragment(self):
        r = self.ok("import", "argo", CONFIGMAP)
        self.assertEqual(r.out, CONFIGMAP_FRAGMENT)
        self.assertEqual(r.err, "")

    def test_fragment_loads_in_sluiced(self):
        text = self.ok("import", "argo", "--strategy-keys", CONFIGMAP, LIST).out
        srv = Sluiced(config=text)
        try:
            self.assertEqual(self.semaphore("argo/ConfigMap/my-config/workflow", srv),
                             (1, "strict"))
            self.assertEqual(self.semaphore("argo/ConfigMap/my-config/template", srv),
                             (2, "strict"))
            self.assertEqual(self.semaphore("ci/ConfigMap/ci-limits/pr", srv), (10, "rebalanced"))
            self.assertEqual(self.semaphore("ci/ConfigMap/ci-limits/nightly", srv),
                             (3, "strict"))
        finally:
            srv.stop()

    def test_json(self):
        for args in (["--json", "import", "argo", CONFIGMAP], ["import", "argo", CONFIGMAP,
                                                                 "--json"]):
            self.assertEqual(self.ok(*args).json(), {"semaphores": [
                {"name": "argo/ConfigMap/my-config/workflow", "limit": 1, "strategy": "strict"},
                {"name": "argo/ConfigMap/my-config/template", "limit": 2,
                 "strategy": "strict"}]})

    def test_list_and_skipped_kinds(self):
        r = self.ok("import", "argo", "--strategy-keys", LIST)
        self.assertEqual(r.out, 'semaphores:\n'
                         '  - {name: "ci/ConfigMap/ci-limits/nightly", limit: 3, '
                         'strategy: strict}\n'
                         '  - {name: "ci/ConfigMap/ci-limits/pr", limit: 10, '
                         'strategy: rebalanced}\n')
        self.assertEqual(r.err, "sluice: %s:18:5: skipped Secret registry: not a ConfigMap\n"
                         % LIST)

    def test_several_documents_and_namespace_flag(self):
        r = self.ok("import", "argo", "--namespace", "gpu", "--strategy-keys", MULTI)
        self.assertEqual(r.out, 'semaphores:\n'
                         '  - {name: "gpu/ConfigMap/gpus/a100", limit: 4, strategy: rebalanced}\n'
                         '  - {name: "gpu/ConfigMap/builds/linux", limit: 8, strategy: strict}\n')
        self.assertIn("skipped Workflow hello: not a ConfigMap", r.err)
        self.assertEqual(len(r.err.splitlines()), 1, r)

    def test_stdin_and_several_files(self):
        with open(CONFIGMAP) as f:
            text = f.read()
        rc, out, err = self.stdin(text, "import", "argo", "-")
        self.assertEqual((rc, out, err), (0, CONFIGMAP_FRAGMENT, ""))
        rc, out, err = self.stdin("", "import", "argo", "-")
        self.assertEqual(rc, USAGE)
        self.assertIn("no ConfigMap in <stdin>", err)
        # stdin among files; positions name <stdin>
        rc, out, err = self.stdin(configmap('  x: "-1"\n'), "import", "argo", CONFIGMAP, "-")
        self.assertEqual((rc, out), (USAGE, ""))
        self.assertTrue(err.startswith("sluice: <stdin>:7:6: ConfigMap c, key x"), err)

    def test_namespace_rules(self):
        # the ConfigMap's own namespace wins over --namespace
        path = self.write(configmap('  k: "3"\n', namespace="own"))
        r = self.ok("import", "argo", "--namespace", "flag", path)
        self.assertIn('"own/ConfigMap/c/k"', r.out)
        # without one, --namespace
        path = self.write(configmap('  k: "3"\n', namespace=None))
        self.assertIn('"flag/ConfigMap/c/k"',
                      self.ok("import", "argo", "--namespace=flag", path).out)
        # neither: an error saying to pass --namespace
        self.fails(["import", "argo", path], path + ":1:1: ", "ConfigMap c has no "
                   "metadata.namespace", "pass --namespace NS")

    def test_strategies(self):
        text = configmap('  a: "1"\n  a-strategy: default\n  b: 2\n  b-strategy: rebalanced\n'
                         '  c: "3"\n  d: "4"\n'
                         '  semaphoreStrategies:\n    c: rebalanced\n    d: default\n'
                         '  build-strategy: "5"\n')
        r = self.ok("import", "argo", "--strategy-keys", self.write(text))
        self.assertEqual(r.out, 'semaphores:\n'
                         '  - {name: "ns/ConfigMap/c/a", limit: 1, strategy: strict}\n'
                         '  - {name: "ns/ConfigMap/c/b", limit: 2, strategy: rebalanced}\n'
                         '  - {name: "ns/ConfigMap/c/c", limit: 3, strategy: rebalanced}\n'
                         '  - {name: "ns/ConfigMap/c/d", limit: 4, strategy: strict}\n'
                         '  - {name: "ns/ConfigMap/c/build-strategy", limit: 5, '
                         'strategy: strict}\n')
        # semaphoreStrategies as a string holding YAML or JSON (ConfigMap values are strings)
        for value in ('"{\\"a\\": \\"rebalanced\\"}"', "|\n    a: rebalanced"):
            text = configmap('  a: "1"\n  semaphoreStrategies: %s\n' % value)
            self.assertEqual(self.ok("import", "argo", "--strategy-keys", self.write(text)).out,
                             'semaphores:\n'
                             '  - {name: "ns/ConfigMap/c/a", limit: 1, strategy: rebalanced}\n')
        # the same strategy twice is fine, two different ones are not
        text = configmap('  a: "1"\n  a-strategy: rebalanced\n'
                         '  semaphoreStrategies: "{a: rebalanced}"\n')
        self.ok("import", "argo", "--strategy-keys", self.write(text))
        path = self.write(configmap('  a: "1"\n  a-strategy: rebalanced\n'
                                    '  semaphoreStrategies: "{a: default}"\n'))
        self.fails(["import", "argo", "--strategy-keys", path], path + ":9:24: ",
                   "key a is given two strategies, rebalanced and default; keep one")

    def test_apply(self):
        r = self.ok("import", "argo", "--apply", CONFIGMAP)
        self.assertEqual(r.out, "configured argo/ConfigMap/my-config/workflow: limit 1, strict\n"
                         "configured argo/ConfigMap/my-config/template: limit 2, strict\n")
        self.assertEqual(self.semaphore("argo/ConfigMap/my-config/workflow"), (1, "strict"))
        self.assertEqual(self.semaphore("argo/ConfigMap/my-config/template"), (2, "strict"))
        # again with other limits, through stdin, --json: the server's own JSON
        text = configmap('  pr: "7"\n  semaphoreStrategies: "{pr: rebalanced}"\n',
                         name="ci-limits", namespace="ci")
        rc, out, err = self.stdin(text, "--json", "import", "argo", "--apply", "--strategy-keys",
                                  "-")
        self.assertEqual((rc, err), (0, ""), out)
        sems = json.loads(out)["semaphores"]
        self.assertEqual([(s["name"], s["limit"], s["strategy"]) for s in sems],
                         [("ci/ConfigMap/ci-limits/pr", 7, "rebalanced")])
        self.assertEqual(self.semaphore("ci/ConfigMap/ci-limits/pr"), (7, "rebalanced"))

    def test_apply_unreachable(self):
        url = "http://127.0.0.1:%d" % free_port()
        r = sluice(None, "--server", url, "import", "argo", "--apply", CONFIGMAP)
        self.assertEqual(r.rc, 3, r)
        self.assertIn("cannot configure semaphore argo/ConfigMap/my-config/workflow", r.err)
        self.assertIn("Is sluiced running at %s?" % url, r.err)

    def test_input_is_checked_before_the_server_is_asked(self):
        path = self.write(configmap('  bad: "-1"\n', name="late"))
        r = sluice(self.srv, "import", "argo", "--apply", CONFIGMAP, path)
        self.assertEqual(r.rc, USAGE, r)
        self.assertEqual(r.out, "", r)
        self.assertEqual(self.srv.get("/v1/semaphores/" + q("ns/ConfigMap/late/bad")).status, 404)

    # ---- import: errors ------------------------------------------------------------

    def test_bad_limits(self):
        # numbers (as Go's strconv.Atoi reads them) that sluice cannot take
        for value in ("-1", '"1000000001"', '"99999999999999999999"'):
            path = self.write(configmap("  template: %s\n" % value, name="my-config"))
            self.fails(["import", "argo", path], path + ":7:",
                       "ConfigMap my-config, key template: %s is no semaphore limit sluice can "
                       "take" % value.strip('"'), "write a whole number from 0 to 1000000000")
        # what is no number at all is no semaphore: skipped, with a warning
        for value, shown in (('"x1"', '"x1"'), ("2.5", '"2.5"'), ('""', '""'), ("[1]", "a list"),
                             ('" 2"', '" 2"'), ('"2_0"', '"2_0"')):
            path = self.write(configmap('  a: "1"\n  template: %s\n' % value, name="my-config"))
            r = self.ok("import", "argo", path)
            self.assertEqual(r.out, 'semaphores:\n'
                             '  - {name: "ns/ConfigMap/my-config/a", limit: 1, strategy: strict}\n')
            self.assertTrue(r.err.startswith(
                "sluice: warning: %s:8:13: ConfigMap my-config, key template: %s is not a "
                "number: skipped, no semaphore" % (path, shown)), r)
            self.assertEqual(len(r.err.splitlines()), 1, r)

    def test_bad_strategies(self):
        sk = ["import", "argo", "--strategy-keys"]
        path = self.write(configmap('  a: "1"\n  a-strategy: fast\n'))
        self.fails(sk + [path], path + ":8:15: ",
                   '"fast" is not a strategy (for key a)',
                   "with --strategy-keys write rebalanced or default")
        path = self.write(configmap('  a: "1"\n  semaphoreStrategies:\n    a: fastest\n'))
        self.fails(sk + [path], path + ":9:8: ",
                   '"fastest" is not a strategy (for key a)')
        path = self.write(configmap('  a: "1"\n  semaphoreStrategies: "{b: rebalanced}"\n'))
        self.fails(sk + [path], path + ":8:24: ",
                   '"b" is not a semaphore key of the ConfigMap')
        path = self.write(configmap('  a: "1"\n  semaphoreStrategies: "{a: [}"\n'))
        self.fails(sk + [path], path + ":8:24: ",
                   "key semaphoreStrategies: not YAML or JSON")
        path = self.write(configmap('  b-strategy: rebalanced\n'))
        self.fails(sk + [path], path + ":7:3: ",
                   "b-strategy sets the strategy of key b, which the ConfigMap does not have")

    # ---- import: real inputs (E4) and strategies only when asked (E8) ---------------

    def test_real_configmaps_skip_keys_without_a_number(self):
        r = self.ok("import", "argo", KUBECTL_LIST)
        self.assertEqual(r.out, 'semaphores:\n'
                         '  - {name: "argo/ConfigMap/my-config/workflow", limit: 2, '
                         'strategy: strict}\n'
                         '  - {name: "argo/ConfigMap/my-config/deploy", limit: 1, '
                         'strategy: strict}\n'
                         '  - {name: "argo/ConfigMap/my-config/deploy-strategy", limit: 2, '
                         'strategy: strict}\n')
        w = "sluice: warning: %s:" % KUBECTL_LIST
        self.assertEqual(r.err.splitlines(), [
            w + "9:5: ConfigMap kube-root-ca.crt: skipped, no key holds a number (ca.crt): "
            "no semaphores",
            w + "20:5: ConfigMap workflow-controller-configmap: skipped, no key holds a number "
            "(config): no semaphores",
            w + "28:5: ConfigMap artifact-repositories: skipped, no key holds a number "
            "(default-v1): no semaphores",
            w + "46:14: ConfigMap my-config, key owner: \"platform-team\" is not a number: "
            "skipped, no semaphore (Argo reads a limit only from a key a workflow names)"])
        # a value over several lines is shown as its first line, cut short
        text = configmap('  a: "1"\n  pem: |\n    %s\n    second line\n' % ("x" * 70))
        err = self.ok("import", "argo", self.write(text)).err
        self.assertIn('key pem: "%s..." is not a number' % ("x" * 40), err)
        self.assertEqual(len(err.splitlines()), 1, err)
        # --configmap: only those named (repeatable); a name not in the input is an error
        r = self.ok("import", "argo", "--configmap", "my-config", KUBECTL_LIST)
        self.assertIn('"argo/ConfigMap/my-config/deploy"', r.out)
        self.assertIn("%s:9:5: skipped ConfigMap kube-root-ca.crt: not named by --configmap"
                      % KUBECTL_LIST, r.err)
        self.assertNotIn("no key holds a number", r.err)
        r = self.ok("import", "argo", "--configmap", "my-config", "--configmap",
                    "kube-root-ca.crt", KUBECTL_LIST)
        self.assertIn("ConfigMap kube-root-ca.crt: skipped, no key holds a number", r.err)
        self.fails(["import", "argo", "--configmap", "my-cofnig", KUBECTL_LIST], "",
                   "--configmap my-cofnig: no ConfigMap of that name in the input")
        self.fails(["import", "argo", "--configmap", "", KUBECTL_LIST], "",
                   "--configmap needs a ConfigMap's name")

    def test_strategy_keys_only_when_asked(self):
        # Argo has no strategies: KEY-strategy and semaphoreStrategies are
        # ordinary keys unless --strategy-keys asks for sluice's convention
        text = configmap('  deploy: "1"\n  deploy-strategy: "2"\n  gpu: "4"\n'
                         '  gpu-strategy: rebalanced\n')
        path = self.write(text)
        r = self.ok("import", "argo", path)
        self.assertEqual(r.out, 'semaphores:\n'
                         '  - {name: "ns/ConfigMap/c/deploy", limit: 1, strategy: strict}\n'
                         '  - {name: "ns/ConfigMap/c/deploy-strategy", limit: 2, '
                         'strategy: strict}\n'
                         '  - {name: "ns/ConfigMap/c/gpu", limit: 4, strategy: strict}\n')
        self.assertEqual(r.err, "sluice: warning: %s:10:17: ConfigMap c, key gpu-strategy: "
                         "\"rebalanced\" is not a number: skipped, no semaphore (Argo reads a "
                         "limit only from a key a workflow names); sluice reads it as a strategy "
                         "with --strategy-keys (no Argo has strategies)\n" % path)
        path = self.write(configmap('  deploy: "1"\n  gpu: "4"\n  gpu-strategy: rebalanced\n'))
        r = self.ok("import", "argo", "--strategy-keys", path)
        self.assertIn('"ns/ConfigMap/c/gpu", limit: 4, strategy: rebalanced}', r.out)
        self.assertEqual(r.err, "")

    def test_not_yaml_and_not_kubernetes(self):
        path = self.write("data: [1, 2\nkind: {\n")
        self.fails(["import", "argo", path], path + ":2:", "not YAML:")
        path = self.write("just a line of text\n")
        self.fails(["import", "argo", path], path + ":1:1: ", "not a Kubernetes object")
        path = self.write("name: x\nvalue: 1\n")
        self.fails(["import", "argo", path], path + ":1:1: ", "it has no kind")
        path = self.write("\x00\x01binary")
        self.fails(["import", "argo", path], path, "not YAML")
        # libyaml slows down with depth: deep nesting is refused at once
        path = self.write("[" * 1000000)
        for cmd in (["import", "argo"], ["argo", "flags"]):
            self.fails(cmd + [path], path + ":1:101: ", "nested more than 100 deep")

    def test_no_configmap(self):
        path = self.write("apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\n")
        r = sluice(self.srv, "import", "argo", path)
        self.assertEqual(r.rc, USAGE, r)
        self.assertEqual(r.err, "sluice: %s:1:1: skipped Secret s: not a ConfigMap\n"
                         "sluice: no ConfigMap in %s; Argo's semaphore limits are in one: "
                         "kubectl get configmap NAME -n NS -o yaml > FILE\n" % (path, path))
        path = self.write(configmap(""))
        r = sluice(self.srv, "import", "argo", path)
        self.assertEqual(r.rc, USAGE, r)
        self.assertIn("ConfigMap c has no data", r.err)
        self.assertIn("the ConfigMaps hold no semaphore limits", r.err)

    def test_name_sluice_cannot_take(self):
        path = self.write(configmap('  "..": "1"\n'))
        self.fails(["import", "argo", path], path + ":7:3: ",
                   '"ns/ConfigMap/c/.." is not a sluice lock name')

    def test_duplicates(self):
        path = self.write(configmap('  a: "1"\n  a: "2"\n'))
        self.fails(["import", "argo", path], path + ":8:3: ", "key a is given twice")
        r = sluice(self.srv, "import", "argo", CONFIGMAP, CONFIGMAP)
        self.assertEqual(r.rc, USAGE, r)
        self.assertEqual(r.err, "sluice: %s:10:3: semaphore argo/ConfigMap/my-config/template is "
                         "given twice (first at %s:10:3); give each ConfigMap once\n"
                         % (CONFIGMAP, CONFIGMAP))

    def test_files(self):
        d = tmpdir(self)
        big = os.path.join(d, "big.yaml")
        with open(big, "w") as f:
            f.write("# padding\n" * 500000)
        self.fails(["import", "argo", big], big + " is larger than 4 MiB")
        missing = os.path.join(d, "missing.yaml")
        self.fails(["import", "argo", missing],
                   "cannot read %s: No such file or directory" % missing)
        self.fails(["import", "argo", d], "cannot read %s: Is a directory" % d)
        for args, msg in ((["import"], "missing the source"),
                          (["import", "helm", CONFIGMAP], "the source is argo"),
                          (["import", "argo"], "missing FILE"),
                          (["import", "argo", "--template", "x", CONFIGMAP], "unknown flag"),
                          (["import", "argo", "--namespace", "", CONFIGMAP], "needs a namespace")):
            self.fails(args, "", msg, "Try 'sluice import --help'.")

    # ---- argo flags ------------------------------------------------------------------

    def flags(self, *args):
        r = self.ok("argo", "flags", *args)
        self.assertTrue(r.out.endswith("\n") and r.out.count("\n") == 1, r)
        return r.out.rstrip("\n"), r.err

    def test_flags_workflow_level_new_forms(self):
        out, err = self.flags(WORKFLOW)
        self.assertEqual(out, "--semaphore argo/ConfigMap/my-config/workflow "
                         "--mutex argo/Mutex/deploy --priority 5")
        # E1: Argo holds a workflow-level block for the whole workflow; the
        # flags alone would make it a per-pod lock: a loud warning, and the
        # commands that carry it (acquire in the first step, release in the
        # exit handler)
        lines = err.splitlines()
        self.assertTrue(lines[0].startswith(
            "sluice: warning: %s:12:5: Workflow synchronization-'s spec.synchronization is a "
            "WORKFLOW-LEVEL lock: Argo holds it for the whole workflow, across all of its "
            "pods." % WORKFLOW), err)
        self.assertIn("would hold it for that step's pod alone", lines[0])
        self.assertEqual(lines[1:3], [
            "  first step:    sluice acquire --holder '{{workflow.uid}}/workflow' --timeout 4h "
            "--lease 4h "
            "--semaphore argo/ConfigMap/my-config/workflow --mutex argo/Mutex/deploy "
            "--priority 5",
            "  exit handler:  sluice claims release --holder-prefix '{{workflow.uid}}/'"])
        self.assertIn('docs/integrations/argo.md, "Workflow-level locks"', lines[3])
        self.assertEqual(len(lines), 4, err)
        # the lease follows the workflow's activeDeadlineSeconds when it has one
        path = self.write("kind: Workflow\nmetadata: {name: w, namespace: n}\nspec:\n"
                          "  activeDeadlineSeconds: 900\n"
                          "  synchronization: {mutex: {name: m}}\n")
        self.assertIn("sluice acquire --holder '{{workflow.uid}}/workflow' --timeout 900s "
                      "--lease 900s "
                      "--mutex n/Mutex/m\n", self.flags(path)[1])

    def test_flags_template_old_forms(self):
        out, err = self.flags("--template", "build", WORKFLOW)
        self.assertEqual(out, "--semaphore argo/ConfigMap/my-config/template "
                         "--rebalance-key '{{workflow.labels.team}}' --priority 5")
        self.assertEqual(err.splitlines(), [
            "sluice: warning: %s:32:25: rebalanceKey is no Argo field (no Argo release has one; "
            "`argo lint` refuses it): sluice reads it as its own --rebalance-key" % WORKFLOW,
            "sluice: warning: %s:32:25: {{workflow.labels.team}} is an Argo "
            "expression, which Argo fills in when the workflow runs; replace it "
            "with its value in the flags" % WORKFLOW,
            "sluice: warning: %s:26:17: template build's priority is not the lock queue's: "
            "Argo queues every lock's waiters by the workflow's spec.priority (a template's "
            "was its pods' scheduling priority); --priority is the workflow's" % WORKFLOW,
            "sluice: note: %s:28:9: template build's block is template-level: Argo holds it "
            "while each of the template's pods runs, as `sluice run FLAGS -- COMMAND` does in "
            "the pod" % WORKFLOW])
        out, err = self.flags("--template", "migrate", WORKFLOW)
        self.assertEqual(out, "--mutex '{{workflow.parameters.env}}/Mutex/db-migrate' "
                         "--priority 5")
        self.assertIn("{{workflow.parameters.env}} in {{workflow.parameters.env}}/Mutex/"
                      "db-migrate is an Argo expression", err)

    def test_flags_database_locks_and_lists(self):
        out, _ = self.flags("--template", "shared", WORKFLOW)
        self.assertEqual(out, "--semaphore ml/Database/gpu --mutex argo/Database/lease "
                         "--priority 5")

    def test_flags_cron_workflow_and_namespaces(self):
        out, _ = self.flags(CRON)
        self.assertEqual(out, "--semaphore argo/ConfigMap/ci-limits/nightly "
                         "--mutex ci/Mutex/nightly-report")
        tmpl = ("apiVersion: argoproj.io/v1alpha1\nkind: ClusterWorkflowTemplate\n"
                "metadata:\n  name: shared\nspec:\n  synchronization:\n    mutex:\n"
                "      name: one\n")
        path = self.write(tmpl)
        self.assertEqual(self.flags("--namespace", "team-a", path)[0], "--mutex team-a/Mutex/one")
        self.fails(["argo", "flags", path], path + ":8:7: ",
                   "ClusterWorkflowTemplate shared has no metadata.namespace",
                   "pass --namespace NS")
        rc, out, err = self.stdin(tmpl, "argo", "flags", "--namespace", "x", "-")
        self.assertEqual((rc, out), (0, "--mutex x/Mutex/one\n"))
        self.assertIn("sluice: warning: <stdin>:7:5: ClusterWorkflowTemplate shared's "
                      "spec.synchronization is a WORKFLOW-LEVEL lock", err)

    def test_flags_json(self):
        r = self.ok("--json", "argo", "flags", "--template", "build", WORKFLOW)
        self.assertEqual(r.json(), {"level": "template",
                                    "semaphores": ["argo/ConfigMap/my-config/template"],
                                    "mutexes": [], "priority": 5,
                                    "rebalance_key": "{{workflow.labels.team}}"})
        r = self.ok("argo", "flags", CRON, "--json")
        self.assertEqual(r.json(), {"level": "workflow",
                                    "semaphores": ["argo/ConfigMap/ci-limits/nightly"],
                                    "mutexes": ["ci/Mutex/nightly-report"], "priority": None,
                                    "rebalance_key": None})

    def test_flags_lock_in_both_forms_once_and_bad_names(self):
        path = self.write("kind: Workflow\nmetadata: {name: w, namespace: n}\nspec:\n"
                          "  synchronization:\n    mutex: {name: m}\n"
                          "    mutexes: [{name: m}, {name: o}]\n"
                          "    semaphore: {database: {key: k}, rebalanceKey: a}\n"
                          "    semaphores: [{database: {key: k}, rebalanceKey: a}]\n")
        self.assertEqual(self.flags(path)[0], "--semaphore n/Database/k --mutex n/Mutex/m "
                         "--mutex n/Mutex/o --rebalance-key a")
        path = self.write("kind: Workflow\nmetadata: {name: w, namespace: n}\nspec:\n"
                          "  synchronization:\n    mutex: {name: \"my mutex\"}\n")
        self.fails(["argo", "flags", path], path + ":5:12: ",
                   '"n/Mutex/my mutex" is not a sluice lock name')
        path = self.write("kind: Workflow\nmetadata: {name: w, namespace: n}\nspec:\n"
                          "  synchronization:\n    semaphores:\n"
                          "    - {database: {key: a}, rebalanceKey: x}\n"
                          "    - {database: {key: b}, rebalanceKey: y}\n")
        r = sluice(self.srv, "argo", "flags", path)
        self.assertEqual((r.rc, r.out), (USAGE, ""), r)
        self.assertTrue(r.err.endswith("sluice: %s:7:42: two rebalance keys, \"x\" and \"y\": "
                                       "a sluice claim has one; give the semaphores the same "
                                       "rebalanceKey\n" % path), r)

    def test_flags_unknown_keys(self):
        # E11: a misspelt key would lose a lock or its namespace without a word
        path = self.write("kind: Workflow\nmetadata: {name: w, namespace: argo}\nspec:\n"
                          "  synchronization:\n"
                          "    mutexs: [{name: deploy}]\n"
                          "    semaphores: [{configMapKeyRef: {name: c, key: k, nmae: x}, "
                          "namespce: other}]\n"
                          "    mutex: {name: m, databse: true}\n")
        out, err = self.flags(path)
        self.assertEqual(out, "--semaphore argo/ConfigMap/c/k --mutex argo/Mutex/m")
        w = "sluice: warning: %s:" % path
        self.assertEqual(err.splitlines()[:4], [
            w + "5:5: mutexs is not a key of a synchronization block: ignored (did you mean "
            "mutexes? the keys are semaphore, semaphores, mutex, mutexes)",
            w + "6:64: namespce is not a key of a semaphore: ignored (did you mean namespace? "
            "the keys are configMapKeyRef, database, namespace, rebalanceKey)",
            w + "6:54: nmae is not a key of configMapKeyRef: ignored (did you mean name? the "
            "keys are name, key, optional)",
            w + "7:22: databse is not a key of a mutex: ignored (did you mean database? the "
            "keys are name, namespace, database)"])
        # no suggestion when nothing is close
        path = self.write("kind: Workflow\nmetadata: {name: w, namespace: argo}\nspec:\n"
                          "  synchronization: {mutex: {name: m}, limits: 3}\n")
        self.assertIn("limits is not a key of a synchronization block: ignored (the keys are",
                      self.flags(path)[1])
        # database is a boolean: a quoted "yes" is a string, not a database mutex
        path = self.write("kind: Workflow\nmetadata: {name: w, namespace: argo}\nspec:\n"
                          "  synchronization: {mutex: {name: m, database: \"yes\"}}\n")
        self.fails(["argo", "flags", path], path + ":4:48: ",
                   "a mutex's database is true or false (a YAML boolean, unquoted), not the "
                   "string \"yes\"")
        for value, lock in (("yes", "argo/Database/m"), ("false", "argo/Mutex/m")):
            path = self.write("kind: Workflow\nmetadata: {name: w, namespace: argo}\nspec:\n"
                              "  synchronization: {mutex: {name: m, database: %s}}\n" % value)
            self.assertEqual(self.flags(path)[0], "--mutex " + lock)

    def test_flags_priority_is_the_workflows(self):
        # E12: Argo's lock queue orders by the workflow's spec.priority; a
        # template's priority was its pods' scheduling priority
        path = self.write("kind: Workflow\nmetadata: {name: w, namespace: argo}\nspec:\n"
                          "  priority: 5\n  templates:\n  - name: t\n    priority: 100\n"
                          "    synchronization: {mutex: {name: m}}\n")
        out, err = self.flags("--template", "t", path)
        self.assertEqual(out, "--mutex argo/Mutex/m --priority 5")
        self.assertIn("%s:7:15: template t's priority is not the lock queue's" % path, err)
        path = self.write("kind: Workflow\nmetadata: {name: w, namespace: argo}\nspec:\n"
                          "  templates:\n  - name: t\n    priority: 100\n"
                          "    synchronization: {mutex: {name: m}}\n")
        self.assertEqual(self.flags("--template", "t", path)[0], "--mutex argo/Mutex/m")

    def test_flags_errors(self):
        self.fails(["argo", "flags", "--template", "main", WORKFLOW], WORKFLOW + ":19:7: ",
                   "template main has no synchronization block",
                   "templates with one: build, migrate, shared (pass --template NAME)")
        self.fails(["argo", "flags", "--template", "nope", WORKFLOW], WORKFLOW + ":3:1: ",
                   "Workflow synchronization- has no template nope",
                   "templates with one: build, migrate, shared")
        self.fails(["argo", "flags", CONFIGMAP], CONFIGMAP + ":3:1: ", "no Argo workflow here")
        path = self.write("apiVersion: argoproj.io/v1alpha1\nkind: Workflow\nmetadata:\n"
                          "  name: w\n  namespace: n\nspec:\n  templates:\n  - name: a\n"
                          "    synchronization:\n      mutex: {name: m}\n")
        self.fails(["argo", "flags", path], path + ":1:1: ",
                   "Workflow w has no spec.synchronization",
                   "templates with one: a (pass --template NAME)")
        path = self.write("kind: Workflow\nmetadata: {name: w, namespace: n}\nspec:\n"
                          "  synchronization: {semaphore: {configMapKeyRef: {name: c}}}\n")
        self.fails(["argo", "flags", path], path + ":4:50: ",
                   "configMapKeyRef needs a name and a key")
        path = self.write("kind: Workflow\nmetadata: {name: w, namespace: n}\nspec:\n"
                          "  synchronization: {}\n")
        self.fails(["argo", "flags", path], path + ":4:20: ",
                   "has no semaphore, semaphores, mutex or mutexes")
        path = self.write("kind: Workflow\nmetadata: {name: w, namespace: n}\nspec:\n"
                          "  priority: high\n  synchronization: {mutex: {name: m}}\n")
        self.fails(["argo", "flags", path], path + ":4:13: ",
                   'priority "high" is not a whole number')
        for args, msg in ((["argo"], "missing the command"), (["argo", "x"], "no command"),
                          (["argo", "flags"], "missing FILE"),
                          (["argo", "flags", WORKFLOW, CRON], "one FILE at a time"),
                          (["argo", "flags", "--apply", WORKFLOW], "unknown flag")):
            self.fails(args, "", msg, "Try 'sluice argo --help'.")

    # ---- the flags, run ----------------------------------------------------------------

    def run_with(self, flags_args, script):
        """`sluice run $(sluice argo flags ...) -- sh -c script` in a shell,
        through eval as docs/cli.md shows: the claim's id and tokens."""
        env = base_env(self.srv, SCRIPT=script)
        env["PATH"] = os.path.dirname(sluice_bin()) + os.pathsep + env["PATH"]
        line = 'eval "sluice run $(sluice argo flags "$@") -- sh -c \\"\\$SCRIPT\\""'
        p = subprocess.run(["sh", "-ec", line, "sh"] + list(flags_args), env=env,
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p)
        return p.stdout.split()

    def test_run_holds_the_locks(self):
        self.ok("import", "argo", "--apply", CONFIGMAP)
        out = self.run_with([WORKFLOW], 'echo "$SLUICE_CLAIM_ID $SLUICE_FENCING_TOKENS"')
        cid, tokens = out
        keys = sorted(t.rsplit("=", 1)[0] for t in tokens.split(","))
        self.assertEqual(keys, ["mtx/argo/Mutex/deploy", "sem/argo/ConfigMap/my-config/workflow"])
        claim = self.srv.get("/v1/claims/" + cid).json
        self.assertEqual(sorted((l["kind"], l["name"]) for l in claim["locks"]),
                         [("mutex", "argo/Mutex/deploy"),
                          ("semaphore", "argo/ConfigMap/my-config/workflow")])
        self.assertEqual(claim["priority"], 5)
        # the template's flags, the quoted expression passed through eval intact
        cid = self.run_with(["--template", "build", WORKFLOW], 'echo "$SLUICE_CLAIM_ID"')[0]
        claim = self.srv.get("/v1/claims/" + cid).json
        self.assertEqual([l["name"] for l in claim["locks"]],
                         ["argo/ConfigMap/my-config/template"])
        self.assertEqual((claim["priority"], claim["rebalance_key"]),
                         (5, "{{workflow.labels.team}}"))
        # without eval too, when no word needs quotes
        env = base_env(self.srv)
        env["PATH"] = os.path.dirname(sluice_bin()) + os.pathsep + env["PATH"]
        p = subprocess.run(["sh", "-c", 'sluice run $(sluice argo flags "$1") -- true', "sh",
                            WORKFLOW], env=env, capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p)
        self.assertIn("WORKFLOW-LEVEL lock", p.stderr)

    # ---- help ------------------------------------------------------------------------

    def test_help(self):
        r = self.ok("--help")
        self.assertRegex(r.out, r"\n  import +import argo")
        self.assertRegex(r.out, r"\n  argo +argo flags")
        for cmd, usage in (("import", "Usage: sluice import argo"),
                           ("argo", "Usage: sluice argo flags")):
            r = self.ok(cmd, "--help")
            self.assertTrue(r.out.startswith(usage), r)
            self.assertIn("Examples:", r.out)
            self.assertEqual(self.ok("help", cmd).out, r.out)


class RefusingServerTest(ServerTestCase):
    """A server whose token may not configure Argo's names: --apply exits 1."""

    CONFIG = """
tokens:
  - name: admin
    token: "adm-secret-0123456789"
    admin: true
  - name: team
    token: "team-secret-0123456789"
    prefixes: ["team/"]
"""
    TOKEN = "adm-secret-0123456789"

    def test_refused(self):
        r = sluice(self.srv, "--token", "team-secret-0123456789", "import", "argo", "--apply",
                   CONFIGMAP)
        self.assertEqual(r.rc, 1, r)
        self.assertEqual(r.out, "", r)
        self.assertIn("sluice: cannot configure semaphore argo/ConfigMap/my-config/workflow: ",
                      r.err)
        self.assertIn("This token may not do that", r.err)
        self.assertEqual(self.srv.get("/v1/semaphores/" + q("argo/ConfigMap/my-config/workflow"))
                         .status, 404)


if __name__ == "__main__":
    main()
