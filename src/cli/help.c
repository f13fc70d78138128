/* help.c - `sluice --help` and `sluice COMMAND --help`.
 *
 * Every text ends with examples: people copy those first. docs/cli.md says
 * the same at length; keep the two in step. */
#include <string.h>

#include "cli.h"

static const char overview[] =
    "sluice - run commands under sluiced's locks, and look at them.\n"
    "\n"
    "Usage: sluice [--server URL] [--token T] [--cacert F] [--cert F --key F] [--json]\n"
    "              COMMAND [ARGS...]\n"
    "\n"
    "Commands:\n"
    "  run        claim locks, run a command while holding them, release them\n"
    "  acquire    claim locks and print the claim's id (for shell scripts)\n"
    "  release    release (or withdraw) claims by id\n"
    "  renew      renew claims' leases by id\n"
    "  sem        semaphores: list, info NAME, set NAME LIMIT, rm NAME\n"
    "  pools      the same as sem\n"
    "  mutex      mutexes: list, info NAME\n"
    "  queue      pending claims: list, why ID, cancel ID, clear LOCK\n"
    "  claims     every claim: list, info ID, release --holder-prefix P\n"
    "  events     the event log (--follow to watch it)\n"
    "  status     the server, its store and its counts\n"
    "  import     import argo: Argo Workflows' semaphore ConfigMaps as semaphores\n"
    "  argo       argo flags: an Argo workflow's synchronization as run's lock flags\n"
    "  token      token new NAME: a random secret and its entry for sluiced.yaml\n"
    "  help       help on a command: sluice help run\n"
    "\n"
    "Global flags (anywhere before run's --):\n"
    "  --server URL   the server (default $SLUICE_SERVER, else " SL_CLIENT_DEFAULT_SERVER "),\n"
    "                 or a cluster's servers: URL,URL,... (tried in turn when one fails)\n"
    "  --token T      bearer token (default $SLUICE_TOKEN)\n"
    "  --cacert FILE  https://: the CAs (PEM) to check the server's certificate with\n"
    "                 (default $SLUICE_CACERT, else the system's)\n"
    "  --cert FILE    https:// with client certificates (mTLS): this client's\n"
    "  --key FILE     certificate and key, PEM (default $SLUICE_CERT, $SLUICE_KEY)\n"
    "  --json         print JSON for scripts instead of tables\n"
    "  --help, -h     this help, or a command's\n"
    "  --version      print the version\n"
    "\n"
    "Durations are written 250ms, 30s, 5m, 1h30m (or a number of seconds).\n"
    "\n"
    "Examples:\n"
    "  sluice run --mutex deploy -- ./deploy.sh\n"
    "  sluice sem set db 3 && sluice run --semaphore db -- ./migrate.sh\n"
    "  sluice queue list\n"
    "\n"
    "Every command, flag, variable and exit status: docs/cli.md.\n";

static const char lock_flags[] =
    "Lock flags:\n"
    "  --mutex NAME              a mutex (repeatable)\n"
    "  --semaphore NAME[:SLOTS]  a configured semaphore (or one with --limit), SLOTS slots\n"
    "                            of it (default 1; repeatable)\n"
    "  --limit N                 after a --semaphore: its limit when nothing configures it,\n"
    "                            made for as long as claims use it (a run's own limit)\n"
    "  --tag K=V                 a tag (repeatable); adds the semaphores tag/K=V and tag/K\n"
    "                            where configured\n"
    "  --group G                 a concurrency group (adds the mutex group/G, or the\n"
    "                            semaphore configured for it); repeatable, up to 8\n"
    "  --cancel pending|in-progress\n"
    "                            after a --group: supersede its older pending claims;\n"
    "                            in-progress also revokes its holders (with one --group,\n"
    "                            anywhere)\n"
    "  --grace D                 how long revoked holders may keep their slots (default 30s)\n"
    "  --priority N              higher goes first (default 0)\n"
    "  --rebalance-key K         the fair-share key on rebalanced semaphores\n"
    "  --lease D                 how long the claim outlives its client: 0 or >= 1s\n"
    "                            (default 30s, SLUICE_LEASE)\n"
    "  --timeout D               give up when not held within D\n"
    "  --holder NAME             who claims (default $SLUICE_HOLDER, else user@host:pid)\n";

static const char run_help[] =
    "Usage: sluice run [LOCK FLAGS] [--kill-grace D] -- COMMAND [ARGS...]\n"
    "\n"
    "Claims the locks, waits until the claim is held (on a terminal, stderr shows why\n"
    "it waits), runs COMMAND while renewing the claim's lease, releases the claim when\n"
    "COMMAND ends, and exits with COMMAND's status (128+N if killed by signal N).\n"
    "If the claim is revoked or its lease is lost meanwhile, COMMAND gets SIGTERM, then\n"
    "SIGKILL after --kill-grace, and sluice exits 125. Signals sent to sluice (TERM,\n"
    "INT, HUP, QUIT, USR1, USR2) are passed on to COMMAND.\n"
    "\n";

static const char run_help_2[] =
    "  --kill-grace D            between SIGTERM and SIGKILL when the claim is lost\n"
    "                            (default 10s; when revoked, cut to end 1s before the\n"
    "                            server hands the slots on)\n"
    "\n"
    "The lease defaults to 30s here: a sluice run killed with -9 frees its slots 30s\n"
    "later. COMMAND's environment has SLUICE_CLAIM_ID, SLUICE_FENCING_TOKEN (of the\n"
    "first lock), SLUICE_FENCING_TOKENS (mtx/NAME=TOKEN,sem/NAME=TOKEN,...: split each\n"
    "entry at its last '=') and SLUICE_SERVER.\n"
    "\n"
    "Environment: SLUICE_CLAIM_TIMEOUT (10m) bounds the wait, and the retries while the\n"
    "server is unreachable, when --timeout is not given; SLUICE_CLAIM_POLL_INTERVAL (1s)\n"
    "and SLUICE_CLAIM_POLL_JITTER (500ms) pace those retries.\n"
    "\n"
    "Exit statuses: COMMAND's own; 120 bad flags; 121 the server refused the claim;\n"
    "122 the server could not be reached in time; 123 timed out waiting; 124 the claim\n"
    "ended before it was held; 125 revoked or lease lost (COMMAND was stopped);\n"
    "126 COMMAND could not be executed; 127 COMMAND not found.\n"
    "\n"
    "Examples:\n"
    "  sluice run --mutex deploy -- ./deploy.sh production\n"
    "  sluice run --semaphore gpu:2 --timeout 1h -- python train.py\n"
    "  sluice run --group pr-12 --cancel in-progress --grace 1m -- make test\n"
    "  sluice run --semaphore run-42/steps:1 --limit 4 -- ./step.sh\n"
    "  # the last run per pull request, and 5 runs per repo ('sluice sem set\n"
    "  # group/repo-* 5' configures the repo groups):\n"
    "  sluice run --group pr-12 --cancel in-progress --group repo-x -- make test\n"
    "  sluice run --mutex db -- sh -c 'migrate --fencing-token \"$SLUICE_FENCING_TOKEN\"'\n";

static const char acquire_help[] =
    "Usage: sluice acquire [LOCK FLAGS]\n"
    "\n"
    "Claims the locks, waits until the claim is held, and prints the claim's id (its\n"
    "JSON with --json); release it with 'sluice release ID'. By default the claim has a\n"
    "30s lease (SLUICE_LEASE) and a detached process (sluice-keeper) renews it while the\n"
    "calling script lives, and releases it when the script dies without doing so.\n"
    "With --lease D, no keeper: renew it with 'sluice renew ID'; --lease 0: no lease.\n"
    "\n";

static const char acquire_help_2[] =
    "\n"
    "Exit statuses: 0 held; 1 the server refused the claim; 2 bad flags; 122 the server\n"
    "could not be reached in time; 123 timed out waiting; 124 the claim ended before it\n"
    "was held.\n"
    "\n"
    "Example:\n"
    "  id=$(sluice acquire --mutex deploy --timeout 5m) || exit\n"
    "  trap 'sluice release \"$id\"' EXIT\n"
    "  ./deploy.sh\n";

static const char release_help[] =
    "Usage: sluice release ID...\n"
    "\n"
    "Releases held claims and withdraws pending ones; prints each id and its final\n"
    "state. Releasing a claim that already ended changes nothing.\n"
    "\n"
    "Example:\n"
    "  sluice release \"$id\"\n";

static const char renew_help[] =
    "Usage: sluice renew ID...\n"
    "\n"
    "Extends the claims' leases and prints when they now expire. Exits 1 when a claim is\n"
    "revoking or has ended: stop using what it protected.\n"
    "\n"
    "Example:\n"
    "  while sleep 60; do sluice renew \"$id\" || kill $worker; done &\n";

static const char sem_help[] =
    "Usage: sluice sem list\n"
    "       sluice sem info NAME\n"
    "       sluice sem set NAME LIMIT [--strategy strict|skip|rebalanced] [--lease D]\n"
    "                      [--overtake-limit D] [RULES]\n"
    "       sluice sem rm NAME\n"
    "('sluice pools' is the same command.)\n"
    "\n"
    "list shows every configured semaphore and pattern (a name ending in *) and the\n"
    "semaphores made from patterns while in use, with the rules that are on; info one\n"
    "semaphore with its rules, holders and queue; set creates or changes one (lowering\n"
    "a limit revokes nobody; 0 pauses it); rm deletes one that nobody holds or waits for.\n"
    "\n"
    "Rules (set replaces the whole configuration: a rule whose flag is not given is off):\n"
    "  --preempt                 the first waiter that cannot fit revokes holders of lower\n"
    "                            priority (strict and skip); their sluice run exits 125\n"
    "  --preempt-grace D         how long a preempted holder keeps its slots (default 30s)\n"
    "  --max-pending N           at most N waiters (0: no bound)\n"
    "  --on-full reject|drop_oldest  a claim arriving at a full queue is refused (409), or\n"
    "                            the oldest waiter is superseded (default reject)\n"
    "  --weight KEY=N            a rebalance key's weight (rebalanced; repeatable)\n"
    "  --default-weight N        the weight of the keys --weight does not list (default 1)\n"
    "  --rate N/PERIOD           at most N grants per PERIOD on average (30/1m, 5/s)\n"
    "  --burst N                 grants allowed at once after a quiet time (default N)\n"
    "  --backdate D              how far back a claim on it may set its created time\n"
    "A companion flag without its rule (--preempt-grace without --preempt, ...) and\n"
    "--weight on a strategy other than rebalanced are refused by the server (status 1).\n"
    "\n"
    "Examples:\n"
    "  sluice sem set db 3\n"
    "  sluice sem set 'tenant/*' 2 --strategy rebalanced --weight acme=3\n"
    "  sluice sem set gpu 4 --preempt --preempt-grace 2m\n"
    "  sluice sem set api 10 --rate 30/1m --burst 1\n"
    "  sluice sem set builds 1 --max-pending 5 --on-full drop_oldest\n"
    "  sluice pools info db\n"
    "  sluice sem rm db\n";

static const char mutex_help[] =
    "Usage: sluice mutex list\n"
    "       sluice mutex info NAME\n"
    "\n"
    "Mutexes need no configuration. list shows those with holders or waiters; info\n"
    "shows any name (its token even when unused), its holder and its queue.\n"
    "\n"
    "Examples:\n"
    "  sluice mutex list\n"
    "  sluice mutex info deploy\n";

static const char queue_help[] =
    "Usage: sluice queue list [--lock mtx/NAME|sem/NAME]\n"
    "       sluice queue why ID\n"
    "       sluice queue cancel ID\n"
    "       sluice queue clear mtx/NAME|sem/NAME [--holder-prefix P]\n"
    "       sluice queue clear --holder-prefix P\n"
    "\n"
    "list shows every pending claim in queue order (priority, then age), or one lock's\n"
    "queue; why explains, lock by lock, what keeps a claim waiting, with what the\n"
    "semaphores' rules say (preempt, share, when rate admits it); cancel is an\n"
    "operator's cancel: the claim (pending, held or revoking) ends canceled \"by an\n"
    "operator\", and its sluice run stops (124 waiting, 125 running). clear is that\n"
    "cancel for every pending claim on the lock, of holders starting with P, or both\n"
    "(holders are left alone), and prints \"canceled N\"; it needs an admin token or\n"
    "the operate permission (a token's prefixes give it) on the claims it cancels.\n"
    "\n"
    "Examples:\n"
    "  sluice queue list\n"
    "  sluice queue list --lock sem/db\n"
    "  sluice queue why 3q2-AbCdEfGhIjKlMnOpQr\n"
    "  sluice queue clear sem/db\n"
    "  sluice queue clear --holder-prefix \"nightly-$RUN_ID/\"\n";

static const char claims_help[] =
    "Usage: sluice claims list [--state S] [--holder H] [--lock mtx/NAME|sem/NAME]\n"
    "       sluice claims info ID\n"
    "       sluice claims release --holder-prefix P\n"
    "\n"
    "list shows claims (ended ones stay for an hour), filtered; info one claim with its\n"
    "locks, tokens and positions. release is a run's cleanup: every live claim whose\n"
    "holder starts with P ends in one step, all of them before anyone else is let in:\n"
    "pending ones withdrawn, held ones released, ones being revoked canceled. It prints\n"
    "\"released R, withdrawn W, canceled C, skipped S\" (skipped is always 0: a\n"
    "limited token's claims outside its prefixes are left alone and not counted).\n"
    "P is a plain prefix (run-4 also matches run-42/...): for\n"
    "holders named RUN/STEP, end it with /.\n"
    "\n"
    "Examples:\n"
    "  sluice claims list --state held\n"
    "  sluice claims info \"$id\"\n"
    "  sluice claims release --holder-prefix \"nightly-$RUN_ID/\"\n";

static const char events_help[] =
    "Usage: sluice events [--since N] [--claim ID] [--limit N] [--follow]\n"
    "\n"
    "Shows the event log: without --since the latest --limit (default 100) events, with\n"
    "it those after sequence number N. --follow prints events as they happen until\n"
    "interrupted (from now on, or after --since N); with --json, one JSON object per\n"
    "line.\n"
    "\n"
    "Examples:\n"
    "  sluice events --limit 20\n"
    "  sluice events --follow --json | jq .type\n";

static const char status_help[] =
    "Usage: sluice status\n"
    "\n"
    "Shows the server's URL, status, version, store and role, and how many claims\n"
    "are pending, held and ended; in shared mode also the leader epoch and the\n"
    "leader. Given several servers, also one row per server: its role, epoch and\n"
    "leader, or the error reaching it. Exits 3 when no server can be reached.\n"
    "\n"
    "Examples:\n"
    "  sluice --server http://10.0.0.5:7700 status\n"
    "  sluice --server http://db1:7700,http://db2:7700 status\n";

static const char import_help[] =
    "Usage: sluice import argo [--namespace NS] [--configmap NAME]... [--strategy-keys]\n"
    "                          [--apply] FILE...\n"
    "\n"
    "Reads Kubernetes YAML (several documents, or a kind: List; - is standard input)\n"
    "and turns each key of a ConfigMap's data that holds a whole number (\"2\", \"+2\",\n"
    "2, as Argo reads one) into a semaphore with that limit, named as Argo Workflows\n"
    "names it: NAMESPACE/ConfigMap/CONFIGMAP/KEY. Keys that hold no number, and\n"
    "ConfigMaps with none (kube-root-ca.crt), are skipped with a warning; other kinds\n"
    "are skipped (one line each on stderr).\n"
    "\n"
    "Without --apply, prints the semaphores as a sluiced.yaml fragment to paste into the\n"
    "server's configuration file ({\"semaphores\": [...]} with --json); with --apply,\n"
    "configures them on the server, as 'sluice sem set' does, one line each.\n"
    "\n"
    "  --namespace NS      the namespace of ConfigMaps without metadata.namespace (the\n"
    "                      namespace of the workflows that use them)\n"
    "  --configmap NAME    only the ConfigMap NAME (repeat it for several)\n"
    "  --strategy-keys     sluice's own convention, which Argo does not have: a key\n"
    "                      KEY-strategy: rebalanced (or default), or a key\n"
    "                      semaphoreStrategies mapping keys to strategies, sets the\n"
    "                      strategy of KEY (default is strict). Without it every\n"
    "                      semaphore is strict and such keys are ordinary keys\n"
    "  --apply             configure the semaphores on the server\n"
    "\n"
    "Exit statuses: 0 done; 1 the server refused a semaphore; 2 bad flags or input (the\n"
    "message says FILE:LINE:COLUMN and what to change); 3 the server could not be reached.\n"
    "\n"
    "Examples:\n"
    "  kubectl get configmap my-config -n argo -o yaml | sluice import argo -\n"
    "  kubectl get configmap -n argo -o yaml | sluice import argo --configmap my-config -\n"
    "  sluice import argo --apply semaphores.yaml\n"
    "  sluice import argo --namespace ci configmaps.yaml\n";

static const char argo_help[] =
    "Usage: sluice argo flags [--namespace NS] [--template NAME] FILE\n"
    "\n"
    "Prints the 'sluice run' lock flags that match the synchronization block of an Argo\n"
    "Workflow, WorkflowTemplate, ClusterWorkflowTemplate or CronWorkflow in FILE (- is\n"
    "standard input): spec.synchronization, or with --template that of the template\n"
    "NAME. Both of Argo's forms are read (semaphore/mutex and semaphores/mutexes):\n"
    "  a ConfigMap semaphore      --semaphore NS/ConfigMap/CONFIGMAP/KEY\n"
    "  a database semaphore       --semaphore NS/Database/KEY\n"
    "  a mutex                    --mutex NS/Mutex/NAME (database: NS/Database/NAME)\n"
    "  the workflow's priority    --priority N (Argo queues every lock by it)\n"
    "  rebalanceKey (no Argo has  --rebalance-key KEY, with a warning\n"
    "  it: sluice's own)\n"
    "A lock's namespace is its own, else the workflow's, else --namespace. Words are\n"
    "shell-quoted where needed; --json prints {\"level\", \"semaphores\", \"mutexes\",\n"
    "\"priority\", \"rebalance_key\"}. Unknown keys in the block are warned about\n"
    "(FILE:LINE:COL, with the key meant). An Argo expression ({{workflow.parameters.x}})\n"
    "is kept, with a warning on stderr: replace it with its value.\n"
    "\n"
    "stderr says which kind the block is. A template's block is held per pod, as\n"
    "'sluice run' holds it. The workflow's block (no --template) Argo holds for the\n"
    "whole workflow: a warning then gives the commands that carry it, 'sluice acquire'\n"
    "in the first step and 'sluice claims release --holder-prefix' in the exit handler.\n"
    "\n"
    "  --namespace NS   the namespace the workflow runs in, when it names none\n"
    "  --template NAME  the synchronization block of template NAME\n"
    "\n"
    "Exit statuses: 0 printed; 2 bad flags, or no such block (the message lists the\n"
    "templates that have one).\n"
    "\n"
    "Examples:\n"
    "  sluice argo flags workflow.yaml\n"
    "  eval \"sluice run $(sluice argo flags --template deploy wf.yaml) -- ./deploy.sh\"\n";

static const char token_help[] =
    "Usage: sluice token new NAME (--admin | --prefix P...)\n"
    "\n"
    "Makes a token for the server's configuration file without talking to the server:\n"
    "prints a random secret (32 random bytes as 64 hex digits) on the first line, then\n"
    "the entry for the file's tokens: list, which holds only the secret's SHA-256\n"
    "(token_sha256), never the secret. Give the secret to the client (--token or\n"
    "SLUICE_TOKEN), add the entry to sluiced.yaml and reload the server (SIGHUP). The\n"
    "secret is kept nowhere: store it when it is printed.\n"
    "\n"
    "  --admin      the token may use every name and the configuration\n"
    "  --prefix P   the token may use the names that start with P (repeatable)\n"
    "\n"
    "Exit statuses: 0 printed; 2 bad flags.\n"
    "\n"
    "Examples:\n"
    "  sluice token new ops --admin\n"
    "  sluice token new team-a --prefix team-a/ --prefix tag/tenant=team-a\n"
    "  sluice token new ci --prefix ci/ > ci.token && head -1 ci.token\n";

bool cli_help(const char *command, FILE *out)
{
    if (!command) {
        fputs(overview, out);
        return true;
    }
    static const struct {
        const char *name, *text;
    } texts[] = {
        {"release", release_help}, {"renew", renew_help},   {"sem", sem_help},
        {"pools", sem_help},       {"mutex", mutex_help},   {"queue", queue_help},
        {"claims", claims_help},   {"events", events_help}, {"status", status_help},
        {"import", import_help},   {"argo", argo_help},     {"token", token_help},
    };
    if (strcmp(command, "run") == 0) {
        fputs(run_help, out);
        fputs(lock_flags, out);
        fputs(run_help_2, out);
        return true;
    }
    if (strcmp(command, "acquire") == 0) {
        fputs(acquire_help, out);
        fputs(lock_flags, out);
        fputs(acquire_help_2, out);
        return true;
    }
    for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
        if (strcmp(texts[i].name, command) == 0) {
            fputs(texts[i].text, out);
            return true;
        }
    }
    return false;
}
