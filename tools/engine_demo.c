/* engine_demo.c - a short story told by the engine itself.
 *
 * Until the server exists, scripts/run builds and runs this: it drives the
 * engine in-process on a simulated clock and prints each event as it
 * happens (seq, time, type, claim), through five scenes: a deploy mutex
 * with priorities, a weighted semaphore pool, a concurrency group that
 * cancels an older run in progress, a lease running out, and `why` for the
 * claims that wait. Nothing here is a test: the story only shows what the
 * engine decides, in words a newcomer can follow. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "engine.h"

typedef struct demo {
    sl_engine *eng;
    int64_t now; /* simulated milliseconds since the story began */
} demo;

/* One claim of the story, with the few fields it needs; zero fields take
 * the engine's defaults (no lease, default grace, one slot). */
typedef struct spec {
    const char *id, *holder;
    sl_kind kind;
    const char *lock; /* NULL: only the group's lock */
    uint32_t slots;
    int32_t priority;
    const char *group;
    sl_cancel cancel;
    int64_t grace_ms, lease_ms;
} spec;

static void fail(const char *what, const char *id, int rc)
{
    fprintf(stderr, "engine_demo: %s %s failed (%d)\n", what, id, rc);
    exit(1);
}

static const char *claim_id(const sl_claim *c)
{
    sl_claim_view v;
    sl_claim_get(c, &v);
    return v.id;
}

/* Prints the batch's events, then clears it as the server would once the
 * store had written it. */
static void show_events(demo *d)
{
    sl_changes ch;
    sl_engine_changes(d->eng, &ch);
    for (size_t i = 0; i < ch.nevents; i++) {
        const sl_event *ev = &ch.events[i];
        printf("    #%-3" PRIu64 " %6.1fs  %-18s", ev->seq, (double)ev->time_ms / 1000.0,
               sl_event_type_name(ev->type));
        if (ev->claim == NULL) {
            printf(" %s limit %" PRIu32 " (%s)\n", ev->name, ev->limit,
                   sl_strategy_name(ev->strategy));
            continue;
        }
        sl_claim_view v;
        sl_claim_get(ev->claim, &v);
        char extra[160] = "";
        size_t n = 0;
        switch (ev->type) {
        case SL_EV_CLAIM_ACQUIRED:
            for (size_t l = 0; l < v.nlocks && n < sizeof(extra); l++) {
                sl_claim_lock_view lv;
                sl_claim_lock_get(d->eng, ev->claim, l, &lv);
                n += (size_t)snprintf(extra + n, sizeof(extra) - n, "%s%s token %" PRIu64,
                                      l ? ", " : "", lv.key, lv.token);
            }
            break;
        case SL_EV_CLAIM_WAITING:
            snprintf(extra, sizeof(extra), "(%s)", sl_rule_name(ev->rule));
            break;
        case SL_EV_CLAIM_QUEUED:
        case SL_EV_CLAIM_RENEWED:
            break;
        default: /* ended or revoking: say why, and which claim did it */
            snprintf(extra, sizeof(extra), "(%s%s%s)", sl_reason_text(ev->reason),
                     v.by ? "; by " : "", v.by ? v.by : "");
            break;
        }
        if (extra[0])
            printf(" %-14s %s\n", v.id, extra);
        else
            printf(" %s\n", v.id);
    }
    sl_engine_changes_clear(d->eng);
}

static void at(demo *d, int64_t ms, const char *what)
{
    d->now = ms;
    printf("  t=%.1fs  %s\n", (double)ms / 1000.0, what);
}

static void claim(demo *d, spec s)
{
    sl_lock_req lr = {s.kind, s.lock, s.slots, 0};
    sl_claim_req req = {
        .id = s.id,
        .holder = s.holder,
        .locks = s.lock ? &lr : NULL,
        .nlocks = s.lock ? 1 : 0,
        .group = s.group,
        .cancel = s.cancel,
        .grace_ms = s.grace_ms ? s.grace_ms : -1,
        .priority = s.priority,
        .lease_ms = s.lease_ms,
    };
    sl_claim *c;
    sl_error err;
    int rc = sl_claim_create(d->eng, &req, d->now, &c, &err);
    if (rc)
        fail("claim", s.id, rc);
    show_events(d);
}

static void release(demo *d, const char *id)
{
    sl_claim *c = sl_claim_find(d->eng, id);
    int rc = c ? sl_claim_release(d->eng, c, SL_REASON_RELEASED, d->now) : SL_ENOTFOUND;
    if (rc)
        fail("release", id, rc);
    show_events(d);
}

/* docs/api.md's GET /v1/claims/{id}/why, in words. */
static void why(demo *d, const char *id)
{
    sl_why w[4];
    sl_claim *c = sl_claim_find(d->eng, id);
    size_t n = c ? sl_claim_why(d->eng, c, w, 4) : 0;
    printf("  why is %s waiting?\n", id);
    for (size_t i = 0; i < n && i < 4; i++) {
        printf("    on %s: %s, %" PRIu64 " of %" PRIu32 " slots used, position %zu", w[i].key,
               sl_rule_name(w[i].rule), w[i].used, w[i].limit, w[i].position);
        for (size_t a = 0; a < w[i].nshown; a++)
            printf("%s%s", a ? ", " : ", behind ", claim_id(w[i].ahead[a]));
        printf("\n");
    }
}

static void scene_deploy(demo *d)
{
    printf("\n1. A deploy mutex: one deploy at a time, urgent ones first\n");
    at(d, 0, "alice asks for the deploy mutex; it is free");
    claim(d, (spec){.id = "alice-deploy", .holder = "ci/alice", .lock = "deploy"});
    at(d, 100, "bob asks too, and waits");
    claim(d, (spec){.id = "bob-deploy", .holder = "ci/bob", .lock = "deploy"});
    at(d, 200, "a hotfix asks with priority 10, so it goes ahead of bob");
    claim(d, (spec){.id = "hotfix", .holder = "ci/oncall", .lock = "deploy", .priority = 10});
    why(d, "bob-deploy");
    at(d, 5000, "alice is done: the hotfix is next, with the next fencing token");
    release(d, "alice-deploy");
    at(d, 7000, "the hotfix is out: bob's turn");
    release(d, "hotfix");
    at(d, 9000, "bob is done");
    release(d, "bob-deploy");
}

static void scene_pool(demo *d)
{
    printf("\n2. A pool of 3 GPUs: claims take 1 or 2 slots, none overtakes\n");
    at(d, 10000, "configure semaphore gpu: limit 3, strict");
    if (sl_sem_set(d->eng, "gpu", 3, SL_STRICT, 0, d->now, NULL))
        fail("sem_set", "gpu", -1);
    show_events(d);
    spec train = {.kind = SL_KIND_SEMAPHORE, .lock = "gpu", .slots = 2};
    at(d, 10100, "train-a takes 2 of the 3 slots");
    train.id = "train-a";
    train.holder = "ml/train-a";
    claim(d, train);
    at(d, 10200, "train-b wants 2: only 1 is free");
    train.id = "train-b";
    train.holder = "ml/train-b";
    claim(d, train);
    at(d, 10300, "eval wants 1: it would fit, but strict keeps it behind train-b");
    claim(d, (spec){.id = "eval", .holder = "ml/eval", .kind = SL_KIND_SEMAPHORE, .lock = "gpu",
                    .slots = 1});
    why(d, "train-b");
    why(d, "eval");
    at(d, 20000, "train-a finishes: 3 slots free, train-b (2) and eval (1) both start");
    release(d, "train-a");
    at(d, 25000, "both finish");
    release(d, "train-b");
    release(d, "eval");
}

static void scene_group(demo *d)
{
    printf("\n3. A concurrency group: a new push cancels the run in progress\n");
    spec run = {.holder = "ci/pr-12", .group = "repo/pr-12",
                .cancel = SL_CANCEL_IN_PROGRESS, .grace_ms = 5000};
    at(d, 30000, "run-1 of pull request 12 starts");
    run.id = "run-1";
    claim(d, run);
    at(d, 40000, "a new commit is pushed: run-2 revokes run-1, which gets 5 s of grace");
    run.id = "run-2";
    claim(d, run);
    at(d, 46000, "run-1 never let go; at 45 s its grace ran out and run-2 started then");
    sl_engine_advance(d->eng, d->now);
    show_events(d);
    release(d, "run-2");
}

static void scene_lease(demo *d)
{
    printf("\n4. A lease: a worker that stops renewing loses its claim\n");
    at(d, 50000, "worker-7 takes the nightly backup lock with a 3 s lease");
    claim(d, (spec){.id = "worker-7", .holder = "host-a/worker-7", .lock = "nightly-backup",
                    .lease_ms = 3000});
    at(d, 50500, "worker-8 waits for it");
    claim(d, (spec){.id = "worker-8", .holder = "host-b/worker-8", .lock = "nightly-backup",
                    .lease_ms = 30000});
    at(d, 52000, "worker-7 renews its lease (a sign of life): it now runs to 55 s");
    if (sl_claim_renew(d->eng, sl_claim_find(d->eng, "worker-7"), d->now))
        fail("renew", "worker-7", -1);
    show_events(d);
    at(d, 56000, "host-a crashed: worker-7's lease ran out at 55 s, worker-8 took over");
    sl_engine_advance(d->eng, d->now);
    show_events(d);
    release(d, "worker-8");
}

int main(void)
{
    demo d = {NULL, 0};
    sl_engine_opts opts;
    sl_engine_opts_default(&opts);
    if (sl_engine_new(&opts, &d.eng))
        fail("engine", "new", -1);
    printf("sluice engine demo: the engine alone, on a simulated clock.\n"
           "Each action is followed by the events it caused: #seq, time, type, claim.\n");
    scene_deploy(&d);
    scene_pool(&d);
    scene_group(&d);
    scene_lease(&d);

    sl_engine_stats st;
    sl_engine_stats_get(d.eng, &st);
    printf("\nAt the end: %zu claims pending, %zu held, %" PRIu64 " grants, %" PRIu64
           " events.\n",
           st.pending, st.held, st.grants, st.next_seq - 1);
    sl_engine_free(d.eng);
    return 0;
}
