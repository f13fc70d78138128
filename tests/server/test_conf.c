/* test_conf.c - src/server/conf.c: defaults, the YAML file, the checks.
 *
 * Files are written into a fresh mkdtemp directory. Covered: the defaults;
 * a full file loads into exactly the values it says; a semaphore's scheduling
 * rules load with the API's defaults; sections left out keep their defaults;
 * the examples in docs/configuration.md load; every kind of
 * error gives its exact message with the file, line, column and key path
 * (unknown, repeated and missing keys, wrong shapes, YAML syntax, each
 * value's conversion, each whole-configuration check); a failed load
 * changes nothing; libcyaml prints nothing; sl_conf_check on its own; the
 * listen and store forms. Leaks are ASan's to find (every path frees). */
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "conf.h"
#include "conf_int.h"

/* printf %s TOPSECRET-0123456789 | sha256sum */
#define TOPSECRET_SHA256 "6d5a2afbb8e64aa2e97faa535b60e7f6166d8bf82b4f049a249c02abf7f7446c"
/* TLS with client certificates (the files are read when served, not here). */
#define TLS_CA "tls:\n  cert: s.pem\n  key: s.key\n  client_ca: ca.pem\n"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static char dir[64];  /* the temporary directory */
static char file[96]; /* dir/config.yaml */

static int make_dir(void **state)
{
    (void)state;
    snprintf(dir, sizeof(dir), "/tmp/sluice-conf-XXXXXX");
    if (!mkdtemp(dir))
        return -1;
    snprintf(file, sizeof(file), "%s/config.yaml", dir);
    return 0;
}

static int remove_dir(void **state)
{
    (void)state;
    unlink(file);
    return rmdir(dir);
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(text, 1, strlen(text), f), strlen(text));
    assert_int_equal(fclose(f), 0);
}

/* Defaults, then the text as dir/config.yaml over them. */
static int load_text(sl_conf *c, const char *yaml, char *err, size_t errlen)
{
    write_text(file, yaml);
    sl_conf_defaults(c);
    return sl_conf_load_file(c, file, err, errlen);
}

static void assert_defaults(const sl_conf *c)
{
    assert_string_equal(c->listen, "127.0.0.1:7700");
    assert_string_equal(c->store, "sqlite:./sluice.db");
    assert_int_equal(c->durability, SL_DURABILITY_NORMAL);
    assert_int_equal(c->log_level, SL_LOG_INFO);
    assert_int_equal(c->default_lease_ms, 0);
    assert_int_equal(c->backdate_skew_ms, 5000);
    assert_int_equal(c->max_wait_ms, 30000);
    assert_int_equal(c->idle_timeout_ms, 60000);
    assert_int_equal(c->header_timeout_ms, 10000);
    assert_int_equal(c->max_connections_per_client, 200);
    assert_int_equal(c->event_retention_ms, 24 * 3600 * 1000);
    assert_int_equal(c->claim_retention_ms, 3600 * 1000);
    assert_int_equal(c->max_body, 65536);
    assert_int_equal(c->max_headers, 16384);
    assert_int_equal(c->max_connections, 4096);
    assert_int_equal(c->max_claims, 10000000);
    assert_int_equal(c->max_streams, 256);
    assert_int_equal(c->max_event_scan, 500);
    assert_int_equal(c->nsemaphores, 0);
    assert_null(c->semaphores);
    assert_int_equal(c->ntokens, 0);
    assert_null(c->tokens);
    assert_null(c->audit_path); /* no audit log */
    assert_false(c->audit_refuse);
}

/* ---- what loads ------------------------------------------------------------ */

static void defaults_are_documented_values(void **state)
{
    (void)state;
    sl_conf c;
    char err[512] = "";
    sl_conf_defaults(&c);
    assert_defaults(&c);
    assert_int_equal(sl_conf_check(&c, err, sizeof(err)), 0);
    assert_string_equal(err, "");
    sl_conf_free(&c);
    /* Freed is zeroed: a second free is harmless. */
    assert_null(c.listen);
    sl_conf_free(&c);
    sl_conf_free(NULL);
}

static const char full_yaml[] = "listen: 0.0.0.0:8800\n"
                                "store: sqlite:/var/lib/sluice/sluice.db\n"
                                "durability: full\n"
                                "log_level: debug\n"
                                "default_lease: 1h30m\n"
                                "default_timeout: 10m\n"
                                "backdate_skew: 30s\n"
                                "limits:\n"
                                "  max_body: 1000\n"
                                "  max_headers: \"2000\"\n"
                                "  max_connections: 30\n"
                                "  max_connections_per_client: 0\n"
                                "  max_claims: 40\n"
                                "  max_streams: 5\n"
                                "  max_wait: 10s\n"
                                "  idle_timeout: 2m\n"
                                "  header_timeout: 250ms\n"
                                "  event_retention: 48h\n"
                                "  claim_retention: 1.5\n"
                                "audit:\n"
                                "  path: /var/log/sluice/audit.log\n"
                                "  on_failure: refuse\n"
                                "semaphores:\n"
                                "  - name: db\n"
                                "    limit: 3\n"
                                "    strategy: strict\n"
                                "    lease: 30s\n"
                                "  - name: \"tenant/*\"\n"
                                "    limit: 2\n"
                                "  - name: queue/builds\n"
                                "    limit: 0\n"
                                "    strategy: rebalanced\n"
                                "    lease: 250ms\n"
                                "  - {name: runs, limit: 1000000000, strategy: skip}\n"
                                "tokens:\n"
                                "  - name: ci\n"
                                "    token: \"s3cret-ci-0123456789\"\n"
                                "    admin: true\n"
                                "  - name: team-a\n"
                                "    token: s3cret-a-0123456789\n"
                                "    prefixes: [\"team-a/\", team-b/x]\n"
                                "  - name: reader\n"
                                "    token: s3cret-r-0123456789\n"
                                "    admin: False\n"
                                "    prefixes:\n"
                                "      - ro/\n";

/* A token known by a hash or by a client certificate. */
static void tokens_by_hash_or_certificate(void **state)
{
    (void)state;
    sl_conf c;
    char err[1024] = "";
    int rc = load_text(&c,
                       TLS_CA "tokens:\n"
                              "  - name: hashed\n"
                              "    token_sha256: 6D5A2AFBB8E64AA2E97FAA535B60E7F6166D8BF82B4F049A"
                              "249C02ABF7F7446C\n"
                              "    admin: true\n"
                              "  - {name: by-cn, certificate: {cn: ci runner}, prefixes: [ci/]}\n"
                              "  - {name: by-dns, certificate: {dns: a.example}, prefixes: [a/]}\n"
                              "  - {name: by-uri, certificate: {uri: \"spiffe://x/y\"},\n"
                              "     admin: true}\n"
                              "  - {name: by-email, certificate: {email: ops@x.example},\n"
                              "     admin: true}\n",
                       err, sizeof(err));
    assert_int_equal(rc, 0);
    assert_null(c.tokens[0].token);
    assert_null(c.tokens[0].certificate);
    assert_string_equal(c.tokens[0].sha256, TOPSECRET_SHA256); /* lower case */
    const char *want[] = {"CN:ci runner", "DNS:a.example", "URI:spiffe://x/y",
                          "email:ops@x.example"};
    for (size_t i = 1; i < 5; i++) {
        assert_null(c.tokens[i].token);
        assert_null(c.tokens[i].sha256);
        assert_string_equal(c.tokens[i].certificate, want[i - 1]);
    }
    assert_int_equal(sl_conf_check(&c, err, sizeof(err)), 0);
    /* Without a client CA (the file's or --tls-client-ca's) no
     * certificate can name a token. */
    char *ca = c.tls_client_ca;
    c.tls_client_ca = NULL;
    assert_int_equal(sl_conf_check(&c, err, sizeof(err)), -1);
    assert_string_equal(err, "tokens[1].certificate: token \"by-cn\" names a client "
                             "certificate, but the server asks for none: set tls.client_ca or "
                             "--tls-client-ca (the CA that signs them), or give the token a "
                             "secret");
    c.tls_client_ca = ca;
    /* A copy (what a reload works on) keeps them. */
    sl_conf d;
    sl__conf_dup(&d, &c);
    assert_string_equal(d.tokens[0].sha256, TOPSECRET_SHA256);
    assert_string_equal(d.tokens[2].certificate, "DNS:a.example");
    sl_conf_free(&d);
    sl_conf_free(&c);
}

static void full_file_loads_every_value(void **state)
{
    (void)state;
    sl_conf c;
    char err[512] = "";
    assert_int_equal(load_text(&c, full_yaml, err, sizeof(err)), 0);
    assert_string_equal(err, "");
    assert_string_equal(c.listen, "0.0.0.0:8800");
    assert_string_equal(c.store, "sqlite:/var/lib/sluice/sluice.db");
    assert_int_equal(c.durability, SL_DURABILITY_FULL);
    assert_int_equal(c.log_level, SL_LOG_DEBUG);
    assert_int_equal(c.default_lease_ms, 5400000);
    assert_int_equal(c.default_timeout_ms, 600000);
    assert_int_equal(c.backdate_skew_ms, 30000);
    assert_int_equal(c.max_body, 1000);
    assert_int_equal(c.max_headers, 2000);
    assert_int_equal(c.max_connections, 30);
    assert_int_equal(c.max_claims, 40);
    assert_int_equal(c.max_streams, 5);
    assert_int_equal(c.max_wait_ms, 10000);
    assert_int_equal(c.idle_timeout_ms, 120000);
    assert_int_equal(c.header_timeout_ms, 250);
    assert_int_equal(c.max_connections_per_client, 0); /* none */
    assert_int_equal(c.event_retention_ms, 48LL * 3600 * 1000);
    assert_int_equal(c.claim_retention_ms, 1500); /* a bare number is seconds */
    assert_string_equal(c.audit_path, "/var/log/sluice/audit.log");
    assert_true(c.audit_refuse);

    assert_int_equal(c.nsemaphores, 4);
    assert_string_equal(c.semaphores[0].name, "db");
    assert_int_equal(c.semaphores[0].limit, 3);
    assert_int_equal(c.semaphores[0].strategy, SL_STRICT);
    assert_int_equal(c.semaphores[0].lease_ms, 30000);
    assert_string_equal(c.semaphores[1].name, "tenant/*");
    assert_int_equal(c.semaphores[1].limit, 2);
    assert_int_equal(c.semaphores[1].strategy, SL_STRICT); /* the default */
    assert_int_equal(c.semaphores[1].lease_ms, 0);         /* none */
    assert_string_equal(c.semaphores[2].name, "queue/builds");
    assert_int_equal(c.semaphores[2].limit, 0);
    assert_int_equal(c.semaphores[2].strategy, SL_REBALANCED);
    assert_int_equal(c.semaphores[2].lease_ms, 250);
    assert_string_equal(c.semaphores[3].name, "runs");
    assert_int_equal(c.semaphores[3].limit, SL_LIMIT_MAX);
    assert_int_equal(c.semaphores[3].strategy, SL_SKIP);
    /* No rules given: every rule off, as the engine reads a zeroed one. */
    static const sl_sem_rules off;
    for (size_t i = 0; i < c.nsemaphores; i++)
        assert_memory_equal(&c.semaphores[i].rules, &off, sizeof(off));

    assert_int_equal(c.ntokens, 3);
    assert_string_equal(c.tokens[0].name, "ci");
    assert_string_equal(c.tokens[0].token, "s3cret-ci-0123456789");
    /* Kept and compared as its SHA-256 (printf %s SECRET | sha256sum). */
    assert_string_equal(c.tokens[0].sha256,
                        "064150aac4757418e203e93d5aa2de1a20348f39fabfa0f1f28521ccdf8501ce");
    assert_null(c.tokens[0].certificate);
    assert_true(c.tokens[0].admin);
    assert_int_equal(c.tokens[0].nprefixes, 0);
    assert_string_equal(c.tokens[1].name, "team-a");
    assert_string_equal(c.tokens[1].token, "s3cret-a-0123456789");
    assert_false(c.tokens[1].admin);
    assert_int_equal(c.tokens[1].nprefixes, 2);
    assert_string_equal(c.tokens[1].prefixes[0], "team-a/");
    assert_string_equal(c.tokens[1].prefixes[1], "team-b/x");
    assert_false(c.tokens[2].admin);
    assert_int_equal(c.tokens[2].nprefixes, 1);
    assert_string_equal(c.tokens[2].prefixes[0], "ro/");

    assert_int_equal(sl_conf_check(&c, err, sizeof(err)), 0);
    sl_conf_free(&c);
}

/* F7: prefixes per permission ("" for every name), beside prefixes, and
 * a ceiling on a token's claims' priority; a copy keeps them all. */
static void token_permissions_load(void **state)
{
    (void)state;
    sl_conf c;
    char err[512] = "";
    assert_int_equal(load_text(&c,
                               "tokens:\n"
                               "  - name: dash\n    token: d-secret-0123456789\n    read: [\"\"]\n"
                               "  - name: team-a\n    token: a-secret-0123456789\n    prefixes: [team-a/]\n"
                               "    claim: [shared/, ci/]\n    operate: [ci/]\n"
                               "    configure: [team-a/x/]\n    max_priority: 100\n",
                               err, sizeof(err)),
                     0);
    assert_string_equal(err, "");
    const sl_conf_token *d = &c.tokens[0], *a = &c.tokens[1];
    assert_int_equal(d->nprefixes, 0);
    assert_int_equal(d->perms[SL_PERM_READ].n, 1);
    assert_string_equal(d->perms[SL_PERM_READ].v[0], "");
    assert_int_equal(d->perms[SL_PERM_CLAIM].n, 0);
    assert_false(d->priority_capped);
    assert_int_equal(a->perms[SL_PERM_CLAIM].n, 2);
    assert_string_equal(a->perms[SL_PERM_CLAIM].v[1], "ci/");
    assert_string_equal(a->perms[SL_PERM_OPERATE].v[0], "ci/");
    assert_string_equal(a->perms[SL_PERM_CONFIGURE].v[0], "team-a/x/");
    assert_true(a->priority_capped);
    assert_int_equal(a->max_priority, 100);
    sl_conf copy;
    sl__conf_dup(&copy, &c);
    assert_string_equal(copy.tokens[1].perms[SL_PERM_CLAIM].v[0], "shared/");
    assert_int_equal(copy.tokens[1].max_priority, 100);
    sl_conf_free(&copy);
    sl_conf_free(&c);
}

/* The scheduling rules, with the API's names and defaults (sem_rules.c). */
static const char rules_yaml[] = "semaphores:\n"
                                 "  - name: runners\n"
                                 "    limit: 4\n"
                                 "    preempt: true\n"
                                 "    preempt_grace: 1m\n"
                                 "    max_pending: 50\n"
                                 "    on_full: drop_oldest\n"
                                 "  - name: tenants\n"
                                 "    limit: 8\n"
                                 "    strategy: rebalanced\n"
                                 "    weights: {paying: 3}\n"
                                 "    default_weight: 1\n"
                                 "  - name: github-api\n"
                                 "    limit: 10\n"
                                 "    rate: 30/1m\n"
                                 "    burst: 5\n"
                                 "    backdate: 1h\n"
                                 "  - name: urgent\n" /* the defaults a rule brings */
                                 "    limit: 1\n"
                                 "    strategy: skip\n"
                                 "    preempt: True\n"
                                 "    max_pending: 1000000000\n"
                                 "    rate: 5/s\n"
                                 "  - name: shares\n"
                                 "    limit: 2\n"
                                 "    strategy: rebalanced\n"
                                 "    weights:\n"
                                 "      paying: 1000000\n"
                                 "      \"team b\": 1\n"
                                 "      free: 2\n"
                                 "  - name: \"off/*\"\n" /* given at the values of off */
                                 "    limit: 3\n"
                                 "    strategy: rebalanced\n"
                                 "    preempt: false\n"
                                 "    max_pending: 0\n"
                                 "    backdate: 0\n"
                                 "    weights:\n";

static void scheduling_rules_load(void **state)
{
    (void)state;
    sl_conf c;
    char err[512] = "";
    if (load_text(&c, rules_yaml, err, sizeof(err)) != 0)
        fail_msg("refused: %s", err);
    assert_int_equal(c.nsemaphores, 6);
    const sl_sem_rules *r = &c.semaphores[0].rules;
    assert_true(r->preempt);
    assert_int_equal(r->preempt_grace_ms, 60000);
    assert_int_equal(r->max_pending, 50);
    assert_int_equal(r->on_full, SL_ON_FULL_DROP_OLDEST);
    assert_int_equal(r->nweights, 0);
    assert_null(r->weights);
    assert_int_equal(r->rate_count, 0);

    r = &c.semaphores[1].rules;
    assert_int_equal(r->nweights, 1);
    assert_string_equal(r->weights[0].key, "paying");
    assert_int_equal(r->weights[0].weight, 3);
    assert_int_equal(r->default_weight, 1);
    assert_false(r->preempt);
    assert_int_equal(r->preempt_grace_ms, 0);

    r = &c.semaphores[2].rules;
    assert_int_equal(r->rate_count, 30);
    assert_int_equal(r->rate_period_ms, 60000);
    assert_int_equal(r->rate_burst, 5);
    assert_int_equal(r->backdate_ms, 3600000);
    assert_int_equal(r->max_pending, 0);

    r = &c.semaphores[3].rules;
    assert_true(r->preempt);
    assert_int_equal(r->preempt_grace_ms, 30000); /* the API's default */
    assert_int_equal(r->max_pending, SL_LIMIT_MAX);
    assert_int_equal(r->on_full, SL_ON_FULL_REJECT);
    assert_int_equal(r->rate_count, 5);
    assert_int_equal(r->rate_period_ms, 1000);
    assert_int_equal(r->rate_burst, 0); /* 0: as many as the rate */

    r = &c.semaphores[4].rules;
    assert_int_equal(r->nweights, 3); /* in the file's order */
    assert_string_equal(r->weights[0].key, "paying");
    assert_int_equal(r->weights[0].weight, SL_WEIGHT_MAX);
    assert_string_equal(r->weights[1].key, "team b");
    assert_int_equal(r->weights[1].weight, 1);
    assert_string_equal(r->weights[2].key, "free");
    assert_int_equal(r->weights[2].weight, 2);
    assert_int_equal(r->default_weight, 0); /* 0: a weight of 1 */

    static const sl_sem_rules off;
    assert_memory_equal(&c.semaphores[5].rules, &off, sizeof(off));
    assert_int_equal(sl_conf_check(&c, err, sizeof(err)), 0);
    sl_conf_free(&c);

    /* An alias stands for its anchor's weights, as anywhere in the file. */
    assert_int_equal(load_text(&c,
                               "semaphores:\n"
                               "  - {name: a, limit: 1, strategy: rebalanced, weights: &w {x: 2}}\n"
                               "  - {name: b, limit: 1, strategy: rebalanced, weights: *w}\n",
                               err, sizeof(err)),
                     0);
    assert_int_equal(c.semaphores[1].rules.nweights, 1);
    assert_string_equal(c.semaphores[1].rules.weights[0].key, "x");
    assert_int_equal(c.semaphores[1].rules.weights[0].weight, 2);
    sl_conf_free(&c);

    /* The most keys that may have a weight of their own. */
    static char many[256 * 16 + 128];
    int n = snprintf(many, sizeof(many),
                     "semaphores:\n  - name: m\n    limit: 1\n"
                     "    strategy: rebalanced\n    weights:\n");
    for (int i = 0; i < 256; i++)
        n += snprintf(many + n, sizeof(many) - (size_t)n, "      k%d: %d\n", i, i + 1);
    if (load_text(&c, many, err, sizeof(err)) != 0)
        fail_msg("256 weights refused: %s", err);
    assert_int_equal(c.semaphores[0].rules.nweights, 256);
    assert_string_equal(c.semaphores[0].rules.weights[255].key, "k255");
    assert_int_equal(c.semaphores[0].rules.weights[255].weight, 256);
    sl_conf_free(&c);
    snprintf(many + n, sizeof(many) - (size_t)n, "      k256: 1\n");
    assert_int_equal(load_text(&c, many, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "config.yaml:6:7: semaphores[0].weights: has 257 keys; at most "
                                "256 rebalance keys may have a weight of their own (the others "
                                "weigh default_weight)"));
    sl_conf_free(&c);
}

static void omitted_sections_keep_defaults(void **state)
{
    (void)state;
    static const char *const texts[] = {
        "",
        "# nothing but a comment\n",
        "---\n",
        "limits:\n",
        "limits: {}\n",
        "semaphores:\n",
        "semaphores: []\n",
        "tokens:\n",
        "tokens: []\n",
        "limits:\nsemaphores:\ntokens:\n",
    };
    for (size_t i = 0; i < COUNT(texts); i++) {
        sl_conf c;
        char err[512] = "";
        if (load_text(&c, texts[i], err, sizeof(err)) != 0)
            fail_msg("\"%s\" was refused: %s", texts[i], err);
        assert_defaults(&c);
        sl_conf_free(&c);
    }

    /* One key changes one value; the rest stay. */
    sl_conf c;
    char err[512] = "";
    assert_int_equal(
        load_text(&c, "log_level: warn\nlimits:\n  max_streams: 9\n", err, sizeof(err)), 0);
    assert_int_equal(c.log_level, SL_LOG_WARN);
    assert_int_equal(c.max_streams, 9);
    c.log_level = SL_LOG_INFO;
    c.max_streams = 256;
    assert_defaults(&c);
    sl_conf_free(&c);
}

/* The first ```yaml block of docs/configuration.md after `after`, cut out
 * of doc (which it changes). */
static char *yaml_block(char *doc, const char *after)
{
    char *start = strstr(doc, after);
    assert_non_null(start);
    start = strstr(start, "```yaml\n");
    assert_non_null(start);
    start += strlen("```yaml\n");
    char *end = strstr(start, "```");
    assert_non_null(end);
    *end = '\0';
    return start;
}

static char *read_configuration_md(void)
{
    FILE *f = fopen(SLUICE_SOURCE_DIR "/docs/configuration.md", "rb");
    assert_non_null(f);
    static char doc[64 * 1024];
    size_t n = fread(doc, 1, sizeof(doc) - 1, f);
    assert_true(n < sizeof(doc) - 1); /* all of it */
    fclose(f);
    doc[n] = '\0';
    return doc;
}

/* The example of "Scheduling rules" loads as it says. */
static void documented_rules_load(void)
{
    sl_conf c;
    char err[512] = "";
    if (load_text(&c, yaml_block(read_configuration_md(), "### Scheduling rules"), err,
                  sizeof(err)) != 0)
        fail_msg("the documented rules were refused: %s", err);
    assert_int_equal(c.nsemaphores, 3);
    assert_int_equal(c.semaphores[0].rules.on_full, SL_ON_FULL_DROP_OLDEST);
    assert_int_equal(c.semaphores[1].rules.nweights, 2);
    assert_int_equal(c.semaphores[2].rules.backdate_ms, 3600000);
    sl_conf_free(&c);
}

/* The first ```yaml block of docs/configuration.md is a working file. */
static void documented_example_loads(void **state)
{
    (void)state;
    char *start = yaml_block(read_configuration_md(), "## A complete example");

    sl_conf c;
    char err[512] = "";
    if (load_text(&c, start, err, sizeof(err)) != 0)
        fail_msg("the documented example was refused: %s", err);
    assert_int_equal(sl_conf_check(&c, err, sizeof(err)), 0);
    assert_string_equal(c.store, "sqlite:/var/lib/sluice/sluice.db");
    assert_int_equal(c.nsemaphores, 6);
    assert_string_equal(c.semaphores[0].name, "db");
    assert_int_equal(c.semaphores[0].lease_ms, 30000);
    assert_int_equal(c.semaphores[0].overtake_ms, SL_OVERTAKE_DEFAULT_MS);
    assert_string_equal(c.semaphores[1].name, "tenant/*");
    assert_string_equal(c.semaphores[3].name, "runs");
    assert_int_equal(c.semaphores[3].strategy, SL_SKIP);
    assert_int_equal(c.semaphores[3].overtake_ms, 120000);
    assert_true(c.semaphores[3].rules.preempt);
    assert_int_equal(c.semaphores[3].rules.preempt_grace_ms, 60000);
    assert_int_equal(c.semaphores[3].rules.max_pending, 500);
    assert_int_equal(c.semaphores[3].rules.on_full, SL_ON_FULL_REJECT);
    assert_string_equal(c.semaphores[4].rules.weights[0].key, "acme");
    assert_int_equal(c.semaphores[4].rules.weights[0].weight, 3);
    assert_int_equal(c.semaphores[5].rules.rate_count, 30);
    assert_int_equal(c.semaphores[5].rules.rate_period_ms, 60000);
    assert_int_equal(c.semaphores[5].rules.rate_burst, 5);
    assert_int_equal(c.ntokens, 3);
    assert_true(c.tokens[0].admin);
    assert_string_equal(c.tokens[1].prefixes[0], "team-a/");
    assert_string_equal(c.tokens[1].perms[SL_PERM_CLAIM].v[0], "shared/");
    assert_string_equal(c.tokens[2].perms[SL_PERM_READ].v[0], "");
    /* The documented limits are the defaults. */
    sl_conf d;
    sl_conf_defaults(&d);
    assert_int_equal(c.max_body, d.max_body);
    assert_int_equal(c.max_headers, d.max_headers);
    assert_int_equal(c.max_connections, d.max_connections);
    assert_int_equal(c.max_claims, d.max_claims);
    assert_int_equal(c.max_streams, d.max_streams);
    assert_int_equal(c.max_wait_ms, d.max_wait_ms);
    assert_int_equal(c.idle_timeout_ms, d.idle_timeout_ms);
    assert_int_equal(c.event_retention_ms, d.event_retention_ms);
    assert_int_equal(c.claim_retention_ms, d.claim_retention_ms);
    assert_int_equal(c.max_semaphores, d.max_semaphores);
    assert_memory_equal(c.token_quotas, d.token_quotas, sizeof(d.token_quotas));
    assert_int_equal(sl_conf_quota(&c, &c.tokens[1], SL_QUOTA_CLAIMS), 500);
    assert_int_equal(sl_conf_quota(&c, &c.tokens[1], SL_QUOTA_RATE), 100);
    assert_int_equal(c.default_lease_ms, d.default_lease_ms);
    assert_int_equal(c.backdate_skew_ms, d.backdate_skew_ms);
    sl_conf_free(&d);
    sl_conf_free(&c);
    documented_rules_load();
}

static void values_in_every_form(void **state)
{
    (void)state;
    sl_conf c;
    char err[512] = "";
    assert_int_equal(load_text(&c,
                               "listen: \"[::1]:7700\"\n"
                               "store: 'sqlite:./x.db'\n"
                               "default_lease: 0.25\n"
                               "limits:\n"
                               "  max_wait: 45\n"
                               "  idle_timeout: 1m30.5s\n"
                               "  event_retention: 876000h\n"
                               "  claim_retention: 1ms\n"
                               "tokens:\n"
                               "  - {name: a, token: x-secret-0123456789, admin: TRUE}\n",
                               err, sizeof(err)),
                     0);
    assert_string_equal(c.listen, "[::1]:7700");
    assert_string_equal(c.store, "sqlite:./x.db");
    assert_int_equal(c.default_lease_ms, 250);
    assert_int_equal(c.max_wait_ms, 45000);
    assert_int_equal(c.idle_timeout_ms, 90500);
    assert_int_equal(c.event_retention_ms, 3153600000000LL);
    assert_int_equal(c.claim_retention_ms, 1);
    assert_true(c.tokens[0].admin);
    sl_conf_free(&c);

    static const struct {
        const char *text;
        sl_log_level level;
    } levels[] = {{"log_level: error\n", SL_LOG_ERROR},
                  {"log_level: warn\n", SL_LOG_WARN},
                  {"log_level: info\n", SL_LOG_INFO},
                  {"log_level: debug\n", SL_LOG_DEBUG}};
    for (size_t i = 0; i < COUNT(levels); i++) {
        assert_int_equal(load_text(&c, levels[i].text, err, sizeof(err)), 0);
        assert_int_equal(c.log_level, levels[i].level);
        sl_conf_free(&c);
    }
}

/* ---- what is refused, and how it is said ----------------------------------- */

typedef struct {
    const char *yaml;
    const char *want; /* the message after "<dir>/" */
    bool exact;       /* else want is its beginning */
} bad_file;

/* A semaphore's first lines, and a rebalanced one's strategy after them. */
#define SEM "semaphores:\n  - name: a\n    limit: 1\n"
#define REB "    strategy: rebalanced\n"

static const bad_file bad_files[] = {
    /* Structure: libcyaml refuses, the walk places it. */
    {"listen: 127.0.0.1:7700\nlisen: x\n",
     "config.yaml:2:1: unknown key \"lisen\"; the top-level keys are listen, plain_listen, store, advertise, leader_timeout, durability, "
     "log_level, default_lease, default_timeout, backdate_skew, limits, tls, cluster, audit, semaphores, tokens, allowed_hosts, insecure_open (libcyaml: Load: Unexpected key: "
     "lisen)",
     true},
    {"limits:\n  max_body: 1\n  max_bdy: 2\n",
     "config.yaml:3:3: limits: unknown key \"max_bdy\"; the keys here are max_body, max_headers, "
     "max_connections, max_connections_per_client, max_claims, max_streams, max_event_scan, "
     "max_semaphores, token_quotas, "
     "max_wait, idle_timeout, header_timeout, event_retention, claim_retention (libcyaml: "
     "Load: Unexpected key: max_bdy)",
     true},
    {"semaphores:\n  - name: q\n    limit: 1\n    overtake_limit: 5m\n",
     "config.yaml:4:21: semaphores[0].overtake_limit: applies to the skip strategy only; leave it "
     "out or use strategy: skip",
     true},
    {"semaphores:\n  - name: a\n    limit: 1\n  - name: b\n    lmit: 2\n",
     "config.yaml:5:5: semaphores[1]: unknown key \"lmit\"; the keys here are name, limit, "
     "strategy, lease, overtake_limit, preempt, preempt_grace, max_pending, on_full, weights, "
     "default_weight, rate, burst, backdate (libcyaml: Load: Unexpected key: lmit)",
     true},
    /* weights, which libcyaml skips, is walked through: the key after it
     * is the one at fault. */
    {"semaphores:\n  - name: a\n    limit: 1\n    strategy: rebalanced\n    weights:\n"
     "      x: [1, {a: 2}]\n      y: 2\n    wieghts: 3\n",
     "config.yaml:8:5: semaphores[0]: unknown key \"wieghts\"; the keys here are name, limit, ",
     false},
    {"semaphores:\n  - name: a\n    limit: 1\n    preempt: true\n    preempt: false\n",
     "config.yaml:5:5: semaphores[0].preempt: is given twice; keep one (libcyaml: Load: Mapping "
     "field already seen: preempt)",
     true},
    {"semaphores:\n  - name: a\n    limit: 1\n    rate: [30, 1m]\n",
     "config.yaml:4:11: semaphores[0].rate: expected a single value, found a list", false},
    {"tokens:\n  - name: a\n    token: x-secret-0123456789\n    prefix: [a/]\n",
     "config.yaml:4:5: tokens[0]: unknown key \"prefix\"; the keys here are name, token, "
     "token_sha256, certificate, admin, prefixes, read, claim, operate, configure, max_priority, "
     "quotas (libcyaml: Load: Unexpected key: prefix)",
     true},
    {"Listen: 127.0.0.1:7700\n", "config.yaml:1:1: unknown key \"Listen\"", false},
    {"listen: 127.0.0.1:1\nstore: sqlite:x\nlisten: 127.0.0.1:2\n",
     "config.yaml:3:1: listen: is given twice; keep one (libcyaml: Load: Mapping field already "
     "seen: listen)",
     true},
    {"semaphores:\n  - name: a\n",
     "config.yaml:2:5: semaphores[0]: \"limit\" is missing; every entry here needs name, limit "
     "(libcyaml: Load: Missing required mapping field: limit)",
     true},
    {"tokens:\n  - name: x\n    admin: true\n",
     "config.yaml:2:5: tokens[0]: token \"x\" has no secret; give token_sha256 (`sluice token "
     "new x` prints a secret and the line), token, or certificate for a client certificate",
     true},
    {"tokens:\n  - name: x\n    token: s-secret-0123456789\n    token_sha256: " TOPSECRET_SHA256
     "\n    admin: true\n",
     "config.yaml:2:5: tokens[0]: token \"x\" is given more than one of token, token_sha256 and "
     "certificate; keep one",
     true},
    {"tokens:\n  - name: x\n    certificate: {cn: a, dns: a.example}\n    admin: true\n",
     "config.yaml:3:18: tokens[0].certificate: give one name of the client certificate: cn, dns, "
     "uri or email, like {cn: ci-runner}",
     true},
    {"tokens:\n  - name: x\n    certificate: {}\n    admin: true\n",
     "config.yaml:3:18: tokens[0].certificate: give one name of the client certificate:", false},
    {"semaphores: db\n",
     "config.yaml:1:13: semaphores: expected a list (entries on lines starting with \"- \", or "
     "[a, b]), found a single value (libcyaml: ",
     false},
    {"listen: [a, b]\n", "config.yaml:1:9: listen: expected a single value, found a list", false},
    {"plain_listen: 0.0.0.0:7701\n",
     "config.yaml:1:15: plain_listen: \"0.0.0.0:7701\" is not a loopback address: this listener "
     "serves without TLS, so it may listen on loopback only; write 127.0.0.1:PORT or [::1]:PORT",
     false},
    {"limits: 5\n",
     "config.yaml:1:9: limits: expected keys with values (key: value, one per line), found a "
     "single value",
     false},
    {"semaphores:\n  - db\n",
     "config.yaml:2:5: semaphores[0]: expected keys with values (key: value, one per line), "
     "found a single value",
     false},
    {"semaphores:\n  -\n",
     "config.yaml:2:4: semaphores[0]: expected keys with values (key: value, one per line), "
     "found a single value (libcyaml: Load: Expecting MAPPING, got event: SCALAR)",
     true},
    {"- listen\n",
     "config.yaml:1:1: expected keys with values (key: value, one per line), "
     "found a list",
     false},
    {"? [a]\n: b\n",
     "config.yaml:1:3: a key must be a single word, like listen (libcyaml: ", false},
    {"listen: \"127.0.0.1:7700\n", "config.yaml:2:1: YAML syntax error: ", false},
    {"limits:\n\tmax_body: 1\n", "config.yaml:2:1: YAML syntax error: ", false},
    {"listen: a: b\n", "config.yaml:1:10: YAML syntax error: mapping values are not allowed",
     false},

    /* Values: converted, and placed by the walk. */
    {"semaphores:\n  - name: db\n    limit: 3\n  - name: b\n    limit: 1\n    strategy: fast\n",
     "config.yaml:6:15: semaphores[1].strategy: \"fast\" is not a strategy; use strict, skip or "
     "rebalanced",
     true},
    {"semaphores:\n  - name: db\n    limit: 1\n    lease: forever\n",
     "config.yaml:4:12: semaphores[0].lease: \"forever\" is not a duration; write a number and "
     "units h, m, s or ms, largest first, like 250ms, 30s, 5m or 1h30m (a bare number is "
     "seconds; at most 100 years)",
     true},
    {"limits:\n  max_wait: 30 s\n",
     "config.yaml:2:13: limits.max_wait: \"30 s\" is not a duration;", false},
    {"default_lease: 30s1m\n", "config.yaml:1:16: default_lease: \"30s1m\" is not a duration;",
     false},
    {"limits:\n  claim_retention: -1h\n",
     "config.yaml:2:20: limits.claim_retention: \"-1h\" is not a duration;", false},
    {"limits:\n  max_body: 64k\n",
     "config.yaml:2:13: limits.max_body: \"64k\" is not a whole number; write digits only, like "
     "65536",
     true},
    {"limits:\n  max_streams: -1\n",
     "config.yaml:2:16: limits.max_streams: \"-1\" is not a whole number;", false},
    {"limits:\n  max_headers: 1.5\n",
     "config.yaml:2:16: limits.max_headers: \"1.5\" is not a whole number;", false},
    {"limits:\n  max_claims: 99999999999999999999999\n",
     "config.yaml:2:15: limits.max_claims: 99999999999999999999999 is more than the largest "
     "allowed, 18446744073709551615",
     true},
    {"semaphores:\n  - name: db\n    limit: 1000000001\n",
     "config.yaml:3:12: semaphores[0].limit: 1000000001 is more than the largest allowed, "
     "1000000000",
     true},
    {"semaphores:\n  - name: db\n    limit: \"\"\n",
     "config.yaml:3:12: semaphores[0].limit: \"\" is not a whole number;", false},
    {"durability: fsync\n",
     "config.yaml:1:13: durability: \"fsync\" is not a durability; use normal (survives a killed "
     "process) or full (survives power loss too)",
     true},
    {"log_level: verbose\n",
     "config.yaml:1:12: log_level: \"verbose\" is not a log level; use error, warn, info or debug",
     true},
    {"log_level: INFO\n", "config.yaml:1:12: log_level: \"INFO\" is not a log level;", false},
    {"tokens:\n  - name: ci\n    token: s-secret-0123456789\n    admin: yes\n",
     "config.yaml:4:12: tokens[0].admin: \"yes\" is not true or false; write true or false", true},

    /* The scheduling rules: each value converted, each key only where it
     * applies (the API's rules), placed by the walk or by libyaml's node. */
    {SEM "    preempt: yes\n",
     "config.yaml:4:14: semaphores[0].preempt: \"yes\" is not true or false; write true or false",
     true},
    {SEM "    preempt_grace: 5s\n",
     "config.yaml:4:20: semaphores[0].preempt_grace: applies only with preempt: true; leave it "
     "out or set preempt: true",
     true},
    {SEM "    preempt: false\n    preempt_grace: 0\n",
     "config.yaml:5:20: semaphores[0].preempt_grace: applies only with preempt: true;", false},
    {SEM "    preempt: true\n    preempt_grace: soon\n",
     "config.yaml:5:20: semaphores[0].preempt_grace: \"soon\" is not a duration; write a number "
     "and units h, m, s or ms, largest first, like 250ms, 30s, 5m or 1h30m (a bare number is "
     "seconds; at most 100 years)",
     true},
    {SEM "    strategy: rebalanced\n    preempt: true\n",
     "config.yaml:5:14: semaphores[0].preempt: applies to the strict and skip strategies only: a "
     "rebalanced semaphore hands out slots by share, not by priority; leave it out or use "
     "strategy: strict or skip",
     true},
    {SEM "    max_pending: -1\n",
     "config.yaml:4:18: semaphores[0].max_pending: \"-1\" is not a whole number; write digits "
     "only, like 50",
     true},
    {SEM "    max_pending: 1000000001\n",
     "config.yaml:4:18: semaphores[0].max_pending: 1000000001 is more than the largest allowed, "
     "1000000000",
     true},
    {SEM "    max_pending: 5\n    on_full: drop\n",
     "config.yaml:5:14: semaphores[0].on_full: \"drop\" is not a way to meet a full queue; use "
     "reject (a claim arriving at a full queue is refused) or drop_oldest (the oldest waiter "
     "gives way)",
     true},
    {SEM "    on_full: reject\n",
     "config.yaml:4:14: semaphores[0].on_full: applies only with a max_pending above 0; set "
     "max_pending, like 50, or leave it out",
     true},
    {SEM "    max_pending: 0\n    on_full: drop_oldest\n",
     "config.yaml:5:14: semaphores[0].on_full: applies only with a max_pending above 0;", false},
    {SEM "    strategy: skip\n    weights: {paying: 3}\n",
     "config.yaml:5:14: semaphores[0].weights: applies to the rebalanced strategy only; leave it "
     "out or use strategy: rebalanced",
     true},
    {SEM "    default_weight: 2\n",
     "config.yaml:4:21: semaphores[0].default_weight: applies to the rebalanced strategy only; "
     "leave it out or use strategy: rebalanced",
     true},
    {SEM REB "    weights: [paying, 3]\n",
     "config.yaml:5:14: semaphores[0].weights: expected keys with values (a rebalance key and "
     "its weight, like paying: 3), found a list",
     true},
    {SEM REB "    weights: 3\n",
     "config.yaml:5:14: semaphores[0].weights: expected keys with values (a rebalance key and "
     "its weight, like paying: 3), found a single value",
     true},
    {SEM REB "    weights:\n      paying: 0\n",
     "config.yaml:6:15: semaphores[0].weights.paying: 0 is less than the smallest allowed, 1",
     true},
    {SEM REB "    weights:\n      paying: 1000001\n",
     "config.yaml:6:15: semaphores[0].weights.paying: 1000001 is more than the largest allowed, "
     "1000000",
     true},
    {SEM REB "    weights:\n      free: 1\n      paying: many\n",
     "config.yaml:7:15: semaphores[0].weights.paying: \"many\" is not a whole number; write "
     "digits only, like 3",
     true},
    {SEM REB "    weights:\n      paying:\n",
     "config.yaml:6:14: semaphores[0].weights.paying: \"\" is not a whole number;", false},
    {SEM REB "    weights:\n      paying: [3]\n",
     "config.yaml:6:15: semaphores[0].weights.paying: expected a single value, found a list; "
     "write a weight, like 3",
     true},
    {SEM REB "    weights: {paying: 3, free: 1, paying: 2}\n",
     "config.yaml:5:35: semaphores[0].weights.paying: is given twice; keep one", true},
    {SEM REB "    weights: {paying: 3}\n    weights: {free: 1}\n",
     "config.yaml:6:5: semaphores[0].weights: is given twice; keep one", true},
    {SEM REB "    weights:\n      \"\": 1\n",
     "config.yaml:6:7: semaphores[0].weights: \"\" is not a rebalance key; use 1 to 253 "
     "characters, like paying",
     true},
    {SEM REB "    weights:\n      \"a\\x01\": 2\n", /* S12 */
     "config.yaml:6:7: semaphores[0].weights: a rebalance key has a control character (byte "
     "0x01) at position 2; use printable characters only, as a claim's rebalance_key does",
     true},
    {SEM REB "    weights:\n      [a]: 1\n",
     "config.yaml:6:7: semaphores[0].weights: a rebalance key must be a single value, like "
     "paying, not a list",
     true},
    {SEM REB "    default_weight: 0\n",
     "config.yaml:5:21: semaphores[0].default_weight: 0 is less than the smallest allowed, 1",
     true},
    {SEM REB "    default_weight: 1000001\n",
     "config.yaml:5:21: semaphores[0].default_weight: 1000001 is more than the largest allowed, "
     "1000000",
     true},
    {SEM "    rate: 100\n",
     "config.yaml:4:11: semaphores[0].rate: \"100\" has no '/'; write N/PERIOD, a number of "
     "grants per a duration, like 100/1m or 5/1s",
     true},
    {SEM "    rate: 0/1m\n",
     "config.yaml:4:11: semaphores[0].rate: \"0/1m\" allows no grant at all: a rate allows 1 to "
     "1000000000 grants per period (a limit of 0 is the way to pause a semaphore); write N/PERIOD",
     false},
    {SEM "    rate: 5/1d\n",
     "config.yaml:4:11: semaphores[0].rate: \"5/1d\" has a period after the '/' that has a day "
     "unit 'd', which durations do not have: write hours instead (24h for 1d);",
     false},
    {SEM "    rate: 5/1000000h\n",
     "config.yaml:4:11: semaphores[0].rate: \"5/1000000h\" has a period after the '/' that is "
     "longer than 100 years, the longest duration;",
     false},
    {SEM "    rate: x/1m\n",
     "config.yaml:4:11: semaphores[0].rate: \"x/1m\" does not start with a whole number of "
     "grants;",
     false},
    {SEM "    rate: 10/0s\n",
     "config.yaml:4:11: semaphores[0].rate: \"10/0s\" has a period after the '/' that is 0: a "
     "period is a positive duration, such as 1s or 1m;",
     false},
    {SEM "    burst: 5\n",
     "config.yaml:4:12: semaphores[0].burst: applies only with a rate; set rate, like 100/1m, or "
     "leave it out",
     true},
    {SEM "    rate: 1/s\n    burst: 0\n",
     "config.yaml:5:12: semaphores[0].burst: 0 is less than the smallest allowed, 1", true},
    {SEM "    rate: 1/s\n    burst: 1000000001\n",
     "config.yaml:5:12: semaphores[0].burst: 1000000001 is more than the largest allowed, "
     "1000000000",
     true},
    {SEM "    backdate: yesterday\n",
     "config.yaml:4:15: semaphores[0].backdate: \"yesterday\" is not a duration;", false},
    {SEM "    backdate: -1h\n",
     "config.yaml:4:15: semaphores[0].backdate: \"-1h\" is not a duration;", false},
    {"backdate_skew: 5 s\n", "config.yaml:1:16: backdate_skew: \"5 s\" is not a duration;", false},

    /* The whole-configuration checks, placed by the walk. */
    {"listen: localhost\n",
     "config.yaml:1:9: listen: \"localhost\" is not HOST:PORT with a port from 1 to 65535; write "
     "it like 127.0.0.1:7700, 0.0.0.0:7700 (every interface) or [::1]:7700",
     true},
    {"listen: \"::1:7700\"\n",
     "config.yaml:1:9: listen: \"::1:7700\" is not HOST:PORT; an IPv6 address goes in brackets, "
     "like [::1]:7700",
     true},
    {"listen: 127.0.0.1:65536\n", "config.yaml:1:9: listen: \"127.0.0.1:65536\" is not HOST:PORT",
     false},
    {"listen:\n", "config.yaml:1:8: listen: is empty; write HOST:PORT, like 127.0.0.1:7700", true},
    /* An empty section before the value does not lose the place. */
    {"limits:\nsemaphores:\nlisten: nowhere\n",
     "config.yaml:3:9: listen: \"nowhere\" is not HOST:PORT", false},
    {"store: mysql://db\n",
     "config.yaml:1:8: store: \"mysql://db\" is not a store URL; write sqlite:PATH, like "
     "sqlite:/var/lib/sluice/sluice.db, or postgres://USER@HOST/DB",
     true},
    {"store: \"sqlite:\"\n", "config.yaml:1:8: store: \"sqlite:\" is not a store URL;", false},
    {"limits:\n  max_body: 0\n", "config.yaml:2:13: limits.max_body: must be at least 1", true},
    {"limits:\n  max_connections: 0\n",
     "config.yaml:2:20: limits.max_connections: must be at least 1", true},
    {"limits:\n  max_wait: 0\n",
     "config.yaml:2:13: limits.max_wait: must be longer than 0 (and at most 100 years); write a "
     "duration like 30s",
     true},
    {"limits:\n  event_retention: 0s\n",
     "config.yaml:2:20: limits.event_retention: must be longer than 0", false},
    {"semaphores:\n  - name: /db\n    limit: 1\n",
     "config.yaml:2:11: semaphores[0].name: \"/db\" is not a semaphore name; use 1 to 253 "
     "characters of A-Z a-z 0-9 . _ - / : =, no leading or trailing '/', no '//', no '.' or "
     "'..' segment, and end it in '*' for a pattern (like \"tenant/*\")",
     true},
    {"semaphores:\n  - name: a b\n    limit: 1\n",
     "config.yaml:2:11: semaphores[0].name: \"a b\" is not a semaphore name;", false},
    {"semaphores:\n  - name: \"\"\n    limit: 1\n",
     "config.yaml:2:11: semaphores[0].name: \"\" is not a semaphore name;", false},
    {"semaphores:\n  - name: db\n    limit: 1\n  - name: x\n    limit: 1\n"
     "  - name: db\n    limit: 2\n  - name: x\n    limit: 1\n",
     "config.yaml:6:11: semaphores[2].name: \"db\" is configured twice (also semaphores[0]); "
     "keep one entry per name",
     true},
    {"tokens:\n  - name: a\n    token: s3cret-same-0123456789\n    admin: true\n"
     "  - name: b\n    token: s3cret-same-0123456789\n    prefixes: [b/]\n",
     "config.yaml:6:12: tokens[1].token: token \"b\" has the same secret as tokens[0] (\"a\"); "
     "give every token its own secret",
     true},
    {"tokens:\n  - name: x\n    token: t1-secret-0123456789\n    admin: true\n"
     "  - name: x\n    token: t2-secret-0123456789\n    admin: true\n",
     "config.yaml:5:11: tokens[1].name: \"x\" is the name of tokens[0] too; give every token its "
     "own name, so that the logs tell them apart",
     true},
    {"tokens:\n  - name: x\n    token: t-secret-0123456789\n",
     "config.yaml:2:5: tokens[0]: token \"x\" may do nothing; set admin: true, or list the name "
     "prefixes it may use, like prefixes: [\"team-a/\"] (every permission) or read: "
     "[\"team-a/\"] (read, claim, operate, configure: each on its own)",
     true},
    {"tokens:\n  - name: x\n    token: t-secret-0123456789\n    read: []\n    claim: []\n",
     "config.yaml:2:5: tokens[0]: token \"x\" may do nothing;", false},
    {"tokens:\n  - name: x\n    token: t-secret-0123456789\n    admin: true\n    claim: [a/]\n",
     "config.yaml:5:12: tokens[0].claim: token \"x\" is admin and has claim prefixes; an admin "
     "token may do everything, so remove them or set admin: false",
     true},
    {"tokens:\n  - name: x\n    token: t-secret-0123456789\n    operate: [ok/, \"a//b\"]\n",
     "config.yaml:4:20: tokens[0].operate[1]: \"a//b\" is not a name prefix; use 1 to 253 "
     "characters of A-Z a-z 0-9 . _ - / : =, no leading or trailing '/', no '//', no '.' or "
     "'..' segment (a trailing '/' is fine), like \"team-a/\", or \"\" for every name",
     true},
    {"tokens:\n  - name: x\n    token: t-secret-0123456789\n    claim: [a/]\n    max_priority: -1\n",
     "config.yaml:5:19: tokens[0].max_priority: \"-1\" is not", false},
    {"tokens:\n  - name: x\n    token: t-secret-0123456789\n    claim: [a/]\n    max_priority: 2147483648\n",
     "config.yaml:5:19: tokens[0].max_priority: ", false},
    {"tokens:\n  - name: x\n    token: t-secret-0123456789\n    admin: true\n    max_priority: 5\n",
     "config.yaml:5:19: tokens[0].max_priority: token \"x\" is admin; an admin token's claims "
     "may ask any priority, so remove max_priority or set admin: false",
     true},
    {"tokens:\n  - name: x\n    token: t-secret-0123456789\n    admin: false\n    prefixes: []\n",
     "config.yaml:2:5: tokens[0]: token \"x\" may do nothing;", false},
    {"tokens:\n  - name: x\n    token: t-secret-0123456789\n    admin: true\n    prefixes: [a/]\n",
     "config.yaml:2:5: tokens[0]: token \"x\" is admin and has prefixes; an admin token may use "
     "every name, so remove prefixes or set admin: false",
     true},
    {"tokens:\n  - name: x\n    token: \"\"\n    admin: true\n",
     "config.yaml:3:12: tokens[0].token: is empty; give the token \"x\" a secret: `sluice token "
     "new x` makes one",
     true},
    /* F15: a clear secret of fewer than 16 characters is refused. */
    {"tokens:\n  - name: x\n    token: short-secret\n    admin: true\n",
     "config.yaml:3:12: tokens[0].token: the secret of token \"x\" has 12 characters, fewer than "
     "16: a short secret can be guessed. `sluice token new x` makes a random one and prints the "
     "entry with only its hash (token_sha256)",
     true},
    {"tokens:\n  - name: x\n    token_sha256: abc123\n    admin: true\n",
     "config.yaml:3:19: tokens[0].token_sha256: the hash of token \"x\" must be a SHA-256 in hex "
     "(64 digits), like the line `sluice token new x` prints",
     true},
    {TLS_CA "tokens:\n  - name: x\n    certificate: {uri: \"spiffe://a\"}\n    admin: true\n"
            "  - name: y\n    certificate: {uri: \"spiffe://a\"}\n    prefixes: [a/]\n",
     "config.yaml:10:18: tokens[1].certificate: token \"y\" names the same certificate as "
     "tokens[0] (\"x\"); give every certificate one entry",
     true},
    {"tokens:\n  - name: a\n    token: TOPSECRET-0123456789\n    admin: true\n"
     "  - name: b\n    token_sha256: " TOPSECRET_SHA256 "\n    admin: true\n",
     "config.yaml:6:19: tokens[1].token_sha256: token \"b\" has the same secret as tokens[0] "
     "(\"a\"); give every token its own secret",
     true},
    {"tokens:\n  - name: x\n    token: \"a b\"\n    admin: true\n",
     "config.yaml:3:12: tokens[0].token: the secret of token \"x\" must be 16 to 1024 visible "
     "ASCII characters without spaces; `sluice token new x` makes one",
     true},
    {"tokens:\n  - name: \"\"\n    token: t-secret-0123456789\n    admin: true\n",
     "config.yaml:2:11: tokens[0].name: is empty; give every token a name for the logs, like ci",
     true},
    /* F11: the audit log's settings. */
    {"audit:\n  path: /tmp/a.log\n  on_failure: stop\n",
     "config.yaml:3:15: audit.on_failure: \"stop\" is not a failure mode; use continue (requests "
     "go on while the audit log cannot be written) or refuse (changes are refused then)",
     true},
    {"audit:\n  path: \"\"\n", "config.yaml:2:9: audit.path: is empty; give the file", false},
    /* F11: events name the server and tokenless requests by these. */
    {"tokens:\n  - name: sluice\n    token: t-secret-0123456789\n    admin: true\n",
     "config.yaml:2:11: tokens[0].name: \"sluice\" is the actor events name for the server "
     "itself and for requests on a server without tokens; give the token another name, like ci",
     true},
    {"tokens:\n  - name: anonymous\n    token: t-secret-0123456789\n    admin: true\n",
     "config.yaml:2:11: tokens[0].name: \"anonymous\" is the actor events name", false},
    {"tokens:\n  - name: x\n    token: t-secret-0123456789\n    prefixes: [\"/x\"]\n",
     "config.yaml:4:16: tokens[0].prefixes[0]: \"/x\" is not a name prefix; use 1 to 253 "
     "characters of A-Z a-z 0-9 . _ - / : =, no leading or trailing '/', no '//', no '.' or "
     "'..' segment (a trailing '/' is fine), like \"team-a/\", or \"\" for every name",
     true},
    {"tokens:\n  - name: x\n    token: t-secret-0123456789\n    prefixes:\n      - ok/\n      - \"a/./b\"\n",
     "config.yaml:6:9: tokens[0].prefixes[1]: \"a/./b\" is not a name prefix;", false},
    {"tokens:\n  - name: x\n    token: t-secret-0123456789\n    prefixes: [a//b]\n",
     "config.yaml:4:16: tokens[0].prefixes[0]: \"a//b\" is not a name prefix;", false},
    /* What the walk does not model: libcyaml's own log, with its places. */
    {"semaphores:\n  - name: a\n    limit: *nope\n",
     "config.yaml: No anchor found for alias: Load: No anchor found for alias: 'nope'; Load: "
     "Backtrace:; in mapping field 'limit' (line: 3, column: 5); in sequence entry '1' (line: 2, "
     "column: 5); in mapping field 'semaphores' (line: 2, column: 3)",
     true},
    /* Inside an alias the walk cannot place it: said without a line. */
    {"semaphores:\n  - &s\n    name: a\n    limit: 1\n  - *s\n",
     "config.yaml: semaphores[1].name: \"a\" is configured twice (also semaphores[0]); keep one "
     "entry per name",
     true},
};
#undef SEM
#undef REB

static void each_error_says_what_where_and_how(void **state)
{
    (void)state;
    for (size_t i = 0; i < COUNT(bad_files); i++) {
        const bad_file *b = &bad_files[i];
        sl_conf c;
        char err[1024] = "";
        if (load_text(&c, b->yaml, err, sizeof(err)) != -1)
            fail_msg("row %zu was accepted:\n%s", i, b->yaml);
        size_t dl = strlen(dir);
        if (strncmp(err, dir, dl) != 0 || err[dl] != '/')
            fail_msg("row %zu: the error does not start with the file: %s", i, err);
        const char *tail = err + dl + 1;
        bool ok =
            b->exact ? strcmp(tail, b->want) == 0 : strncmp(tail, b->want, strlen(b->want)) == 0;
        if (!ok)
            fail_msg("row %zu:\n got: %s\nwant: %s%s", i, tail, b->want, b->exact ? "" : "...");
        /* A failed load changes nothing. */
        assert_defaults(&c);
        sl_conf_free(&c);
    }
}


/* Secrets stay out of messages, whatever is wrong with them. */
static void errors_never_show_a_secret(void **state)
{
    (void)state;
    static const char *const texts[] = {
        ("tokens:\n  - name: a\n    token: TOPSECRET-0123456789\n    admin: true\n"
         "  - name: b\n    token: TOPSECRET-0123456789\n    admin: true\n"),
        "tokens:\n  - name: a\n    token: \"TOP SECRET\"\n    admin: true\n",
        "tokens:\n  - name: a\n    token: TOPSECRET-0123456789\n",
        ("tokens:\n  - name: a\n    token: TOPSECRET-0123456789\n    admin: true\n"
         "    prefixes: [x/]\n"),
        "tokens:\n  - name: a\n    token: TOPSECRET\n    admin: true\n", /* too short */
        /* A clear secret and its own hash are one secret twice. */
        ("tokens:\n  - name: a\n    token: TOPSECRET-0123456789\n    admin: true\n"
         "  - name: b\n    token_sha256: " TOPSECRET_SHA256 "\n    admin: true\n"),
    };
    for (size_t i = 0; i < COUNT(texts); i++) {
        sl_conf c;
        char err[1024] = "";
        assert_int_equal(load_text(&c, texts[i], err, sizeof(err)), -1);
        assert_true(strlen(err) > 0);
        if (strstr(err, "TOP"))
            fail_msg("the secret is in: %s", err);
        sl_conf_free(&c);
    }
}

static void file_problems(void **state)
{
    (void)state;
    sl_conf c;
    char err[1024] = "", path[128];

    sl_conf_defaults(&c);
    snprintf(path, sizeof(path), "%s/missing.yaml", dir);
    assert_int_equal(sl_conf_load_file(&c, path, err, sizeof(err)), -1);
    char want[256];
    snprintf(want, sizeof(want),
             "%s: cannot open the configuration file: No such file or directory; check the "
             "path and its permissions",
             path);
    assert_string_equal(err, want);
    assert_defaults(&c);

    /* A directory opens but does not read. */
    assert_int_equal(sl_conf_load_file(&c, dir, err, sizeof(err)), -1);
    snprintf(want, sizeof(want), "%s: cannot read the configuration file: ", dir);
    assert_memory_equal(err, want, strlen(want));
    assert_defaults(&c);

    /* Just over 8 MiB: refused unread. Exactly 8 MiB of comment loads. */
    size_t big = 8u << 20;
    char *text = malloc(big + 2);
    assert_non_null(text);
    memset(text, ' ', big + 1);
    text[0] = '#';
    text[big - 1] = '\n';
    text[big] = '\0';
    write_text(file, text);
    assert_int_equal(sl_conf_load_file(&c, file, err, sizeof(err)), 0);
    text[big] = '\n';
    text[big + 1] = '\0';
    write_text(file, text);
    free(text);
    assert_int_equal(sl_conf_load_file(&c, file, err, sizeof(err)), -1);
    snprintf(want, sizeof(want), "%s: the file is larger than 8 MiB; is it the configuration file?",
             file);
    assert_string_equal(err, want);
    assert_defaults(&c);
    sl_conf_free(&c);
}

static void short_error_buffers(void **state)
{
    (void)state;
    sl_conf c;
    char err[16];
    memset(err, 'x', sizeof(err));
    assert_int_equal(load_text(&c, "lisen: x\n", err, 8), -1);
    assert_int_equal(strlen(err), 7); /* cut, and terminated */
    assert_int_equal(err[8], 'x');    /* nothing past errlen */
    assert_int_equal(sl_conf_load_file(&c, file, NULL, 0), -1);
    assert_defaults(&c);
    sl_conf_free(&c);
}

/* A load over a loaded configuration: values and lists replaced; a failed
 * load leaves everything as it was. */
/* F4: limits.token_quotas for every limited token, a token's own
 * quotas over them, 0 for none; admins (and no token) have none. */
static void token_quotas_load(void **state)
{
    (void)state;
    sl_conf c;
    char err[1024];
    assert_int_equal(load_text(&c,
                               "limits:\n  max_semaphores: 50\n"
                               "  token_quotas: {claims: 5, streams: 0}\n"
                               "tokens:\n"
                               "  - {name: adm, token: k0-secret-0123456789, admin: true}\n"
                               "  - {name: a, token: k1-secret-0123456789, prefixes: [a/], "
                               "quotas: {claims: 2, "
                               "waiting: 0, requests_per_second: 7, burst: 9}}\n"
                               "  - {name: b, token: k2-secret-0123456789, prefixes: [b/]}\n",
                               err, sizeof(err)),
                     0);
    assert_int_equal(c.max_semaphores, 50);
    const sl_conf_token *adm = &c.tokens[0], *a = &c.tokens[1], *b = &c.tokens[2];
    assert_int_equal(sl_conf_quota(&c, a, SL_QUOTA_CLAIMS), 2);
    assert_int_equal(sl_conf_quota(&c, a, SL_QUOTA_WAITING), 0);      /* its own: none */
    assert_int_equal(sl_conf_quota(&c, a, SL_QUOTA_STREAMS), 0);      /* everyone's: none */
    assert_int_equal(sl_conf_quota(&c, a, SL_QUOTA_SEMAPHORES), 1000); /* the default */
    assert_int_equal(sl_conf_quota(&c, a, SL_QUOTA_RATE), 7);
    assert_int_equal(sl_conf_quota(&c, a, SL_QUOTA_BURST), 9);
    assert_int_equal(sl_conf_quota(&c, b, SL_QUOTA_CLAIMS), 5);
    assert_int_equal(sl_conf_quota(&c, b, SL_QUOTA_WAITING), 5000);
    assert_int_equal(sl_conf_quota(&c, b, SL_QUOTA_LONG_POLLS), 1000);
    assert_int_equal(sl_conf_quota(&c, b, SL_QUOTA_RATE), 1000);
    assert_int_equal(sl_conf_quota(&c, b, SL_QUOTA_BURST), 2000);
    for (int q = 0; q < SL_QUOTA_COUNT; q++) {
        assert_int_equal(sl_conf_quota(&c, adm, (sl_quota)q), 0);
        assert_int_equal(sl_conf_quota(&c, NULL, (sl_quota)q), 0);
    }
    sl_conf copy;
    sl__conf_dup(&copy, &c);
    assert_int_equal(sl_conf_quota(&copy, &copy.tokens[1], SL_QUOTA_CLAIMS), 2);
    sl_conf_free(&copy);
    sl_conf_free(&c);

    assert_int_equal(load_text(&c, "tokens:\n  - {name: a, token: k1-secret-0123456789, "
                                   "prefixes: [a/], "
                                   "quotas: {claims: many}}\n", err, sizeof(err)), -1);
    assert_non_null(strstr(err, "tokens[0].quotas.claims: \"many\" is not a whole number"));
    sl_conf_free(&c);
    assert_int_equal(load_text(&c, "limits:\n  token_quotas: {clams: 1}\n", err, sizeof(err)),
                     -1);
    assert_non_null(strstr(err, "unknown key \"clams\"; the keys here are claims, waiting, "
                                "semaphores, streams, long_polls, requests_per_second, burst"));
    sl_conf_free(&c);
    assert_int_equal(load_text(&c, "tokens:\n  - {name: adm, token: k0-secret-0123456789, "
                                   "admin: true, "
                                   "quotas: {streams: 3}}\n", err, sizeof(err)), -1);
    assert_non_null(strstr(err, "tokens[0].quotas.streams: token \"adm\" is admin, and admin "
                                "tokens have no quotas"));
    sl_conf_free(&c);
}

static void loads_replace_and_failures_keep(void **state)
{
    (void)state;
    sl_conf c;
    char err[1024] = "";
    assert_int_equal(load_text(&c, full_yaml, err, sizeof(err)), 0);

    write_text(file, "listen: 127.0.0.1:9000\nlimits:\n  max_body: 1\n  max_bdy: 2\n");
    assert_int_equal(sl_conf_load_file(&c, file, err, sizeof(err)), -1);
    write_text(file, "listen: 127.0.0.1:9000\nsemaphores:\n  - name: x\n    limit: 1\n"
                     "  - name: x\n    limit: 2\n");
    assert_int_equal(sl_conf_load_file(&c, file, err, sizeof(err)), -1);
    assert_string_equal(c.listen, "0.0.0.0:8800");
    assert_int_equal(c.max_body, 1000);
    assert_int_equal(c.nsemaphores, 4);
    assert_string_equal(c.semaphores[3].name, "runs");
    assert_int_equal(c.ntokens, 3);

    write_text(file, "listen: 127.0.0.1:9000\nsemaphores:\n  - name: only\n    limit: 7\n");
    assert_int_equal(sl_conf_load_file(&c, file, err, sizeof(err)), 0);
    assert_string_equal(c.listen, "127.0.0.1:9000");
    assert_int_equal(c.max_body, 1000); /* not in this file: as before */
    assert_int_equal(c.nsemaphores, 1);
    assert_string_equal(c.semaphores[0].name, "only");
    assert_int_equal(c.semaphores[0].limit, 7);
    assert_int_equal(c.ntokens, 3); /* no tokens in this file: as before */

    /* The rules' weights go with every copy a load works on. */
    write_text(file, rules_yaml);
    assert_int_equal(sl_conf_load_file(&c, file, err, sizeof(err)), 0);
    write_text(file, "semaphores:\n  - name: x\n    limit: 1\n    strategy: rebalanced\n"
                     "    weights: {a: 0}\n");
    assert_int_equal(sl_conf_load_file(&c, file, err, sizeof(err)), -1);
    write_text(file, "log_level: warn\n");
    assert_int_equal(sl_conf_load_file(&c, file, err, sizeof(err)), 0);
    assert_int_equal(c.nsemaphores, 6);
    assert_int_equal(c.semaphores[4].rules.nweights, 3);
    assert_string_equal(c.semaphores[4].rules.weights[1].key, "team b");
    assert_true(c.semaphores[0].rules.preempt);
    sl_conf_free(&c);
}

/* libcyaml's default log writes to stderr; ours must not. */
static void libcyaml_prints_nothing(void **state)
{
    (void)state;
    char out[128];
    snprintf(out, sizeof(out), "%s/stderr.txt", dir);
    fflush(stderr);
    int saved = dup(2);
    assert_true(saved >= 0);
    int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(fd >= 0);
    assert_int_equal(dup2(fd, 2), 2);
    close(fd);

    static const char *const texts[] = {
        "lisen: x\n",
        "listen: \"x\n",
        "semaphores: x\n",
        "semaphores:\n  - name: a\n",
        "listen: a\nlisten: b\n",
        "? [a]\n: b\n",
        "- a\n",
    };
    int failures = 0;
    for (size_t i = 0; i < COUNT(texts); i++) {
        sl_conf c;
        char err[1024];
        failures += load_text(&c, texts[i], err, sizeof(err)) == -1;
        sl_conf_free(&c);
    }
    fflush(stderr);
    assert_int_equal(dup2(saved, 2), 2);
    close(saved);

    struct stat st;
    assert_int_equal(stat(out, &st), 0);
    unlink(out);
    assert_int_equal(failures, (int)COUNT(texts));
    assert_int_equal(st.st_size, 0);
}

/* ---- sl_conf_check on its own (after the command line) ---------------------- */

/* sl_conf_check's message for c, which must be refused. */
static const char *refused(const sl_conf *c)
{
    static char err[512];
    assert_int_equal(sl_conf_check(c, err, sizeof(err)), -1);
    return err;
}

/* The rules of semaphores[0] (strict) and [1] (rebalanced), set as a caller
 * might: each refused with the file's words, then put back. */
static void check_rules_by_hand(sl_conf *c)
{
    char err[512];
    sl_sem_rules *r = &c->semaphores[0].rules, *b = &c->semaphores[1].rules;
    assert_int_equal(sl_conf_check(c, err, sizeof(err)), 0);

    b->preempt = true;
    assert_string_equal(refused(c), "semaphores[1].preempt: applies to the strict and skip "
                                    "strategies only: a rebalanced semaphore hands out slots by "
                                    "share, not by priority; leave it out or use strategy: "
                                    "strict or skip");
    b->preempt = false;
    r->preempt_grace_ms = 1000;
    assert_string_equal(refused(c), "semaphores[0].preempt_grace: applies only with preempt: "
                                    "true; leave it out or set preempt: true");
    r->preempt = true;
    r->preempt_grace_ms = -1;
    assert_string_equal(refused(c), "semaphores[0].preempt_grace: must be 0 (at once) or a "
                                    "duration of at most 100 years, like 30s");
    r->preempt_grace_ms = 0; /* at once */
    assert_int_equal(sl_conf_check(c, err, sizeof(err)), 0);

    r->max_pending = SL_LIMIT_MAX + 1;
    assert_string_equal(refused(c), "semaphores[0].max_pending: 1000000001 is more than the "
                                    "largest allowed, 1000000000");
    r->max_pending = 0;
    r->on_full = SL_ON_FULL_DROP_OLDEST;
    assert_string_equal(refused(c), "semaphores[0].on_full: applies only with a max_pending "
                                    "above 0; set max_pending, like 50, or leave it out");
    r->on_full = (sl_on_full)5;
    r->max_pending = 9;
    assert_string_equal(refused(c), "semaphores[0].on_full: is not a way to meet a full queue; "
                                    "use reject or drop_oldest");
    r->on_full = SL_ON_FULL_DROP_OLDEST;
    assert_int_equal(sl_conf_check(c, err, sizeof(err)), 0);

    static const sl_weight twice[] = {{"paying", 3}, {"free", 1}, {"paying", 2}};
    static const sl_weight nameless[] = {{"paying", 3}, {"free", 1}, {"", 2}};
    static const sl_weight zero[] = {{"paying", 3}, {"free", 0}, {"team-b", 2}};
    static const sl_weight good[] = {{"paying", 3}, {"free", 1}, {"team-b", 2}};
    r->default_weight = 2;
    assert_string_equal(refused(c), "semaphores[0].default_weight: applies to the rebalanced "
                                    "strategy only; leave it out or use strategy: rebalanced");
    r->default_weight = 0;
    r->weights = good;
    r->nweights = 1;
    assert_string_equal(refused(c), "semaphores[0].weights: applies to the rebalanced strategy "
                                    "only; leave it out or use strategy: rebalanced");
    r->weights = NULL;
    r->nweights = 0;
    b->default_weight = SL_WEIGHT_MAX + 1;
    assert_string_equal(refused(c), "semaphores[1].default_weight: 1000001 is not a weight; "
                                    "write a whole number from 1 to 1000000, like 1");
    b->default_weight = SL_WEIGHT_MAX;
    b->weights = twice;
    b->nweights = 3;
    assert_string_equal(refused(c), "semaphores[1].weights.paying: is given twice; keep one");
    b->weights = nameless;
    assert_string_equal(refused(c), "semaphores[1].weights: \"\" is not a rebalance key; use 1 "
                                    "to 253 characters, like paying");
    b->weights = zero;
    assert_string_equal(refused(c), "semaphores[1].weights.free: 0 is not a weight; write a "
                                    "whole number from 1 to 1000000, like 3");
    b->weights = good;
    b->nweights = SL_WEIGHTS_MAX + 1; /* counted before any is read */
    assert_string_equal(refused(c), "semaphores[1].weights: has 257 keys; at most 256 rebalance "
                                    "keys may have a weight of their own (the others weigh "
                                    "default_weight)");
    b->nweights = 3;
    assert_int_equal(sl_conf_check(c, err, sizeof(err)), 0);

    r->rate_burst = 4;
    assert_string_equal(refused(c), "semaphores[0].burst: applies only with a rate; set rate, "
                                    "like 100/1m, or leave it out");
    r->rate_count = 10;
    assert_string_equal(refused(c), "semaphores[0].rate: must be N/PERIOD, 1 to 1000000000 "
                                    "grants per a duration longer than 0, like 100/1m");
    r->rate_period_ms = 60000;
    assert_int_equal(sl_conf_check(c, err, sizeof(err)), 0);
    r->rate_burst = SL_LIMIT_MAX + 1;
    assert_string_equal(refused(c), "semaphores[0].burst: 1000000001 is more than the largest "
                                    "allowed, 1000000000");
    r->rate_burst = 4;
    r->backdate_ms = -1;
    assert_string_equal(refused(c), "semaphores[0].backdate: must be 0 (none) or a duration of "
                                    "at most 100 years, like 1h");
    r->backdate_ms = 0;
    assert_int_equal(sl_conf_check(c, err, sizeof(err)), 0);
    /* The weights are the caller's: nothing of them is kept or freed. */
    b->weights = NULL;
    b->nweights = 0;
}

static void check_without_a_file(void **state)
{
    (void)state;
    sl_conf c;
    char err[512];
    sl_conf_defaults(&c);

    free(c.listen);
    c.listen = strdup("127.0.0.1");
    assert_int_equal(sl_conf_check(&c, err, sizeof(err)), -1);
    assert_string_equal(err, "listen: \"127.0.0.1\" is not HOST:PORT with a port from 1 to 65535; "
                             "write it like 127.0.0.1:7700, 0.0.0.0:7700 (every interface) or "
                             "[::1]:7700");
    free(c.listen);
    c.listen = strdup("127.0.0.1:7700");

    c.durability = (sl_durability)7;
    assert_int_equal(sl_conf_check(&c, err, sizeof(err)), -1);
    assert_string_equal(err, "durability: is not a durability; use normal or full");
    c.durability = SL_DURABILITY_FULL;

    c.log_level = (sl_log_level)9;
    assert_int_equal(sl_conf_check(&c, err, sizeof(err)), -1);
    assert_string_equal(err, "log_level: is not a log level; use error, warn, info or debug");
    c.log_level = SL_LOG_DEBUG;

    c.default_lease_ms = -1;
    assert_int_equal(sl_conf_check(&c, err, sizeof(err)), -1);
    assert_string_equal(err, "default_lease: must be 0 (none) or a duration from 100ms to 100 "
                             "years, like 30s");
    c.default_lease_ms = 99; /* below the floor no client could renew in time */
    assert_int_equal(sl_conf_check(&c, err, sizeof(err)), -1);
    c.default_lease_ms = 100;
    assert_int_equal(sl_conf_check(&c, err, sizeof(err)), 0);
    c.default_lease_ms = 0;

    c.backdate_skew_ms = -1;
    assert_int_equal(sl_conf_check(&c, err, sizeof(err)), -1);
    assert_string_equal(err, "backdate_skew: must be 0 (none) or a duration of at most 100 years, "
                             "like 5s");
    c.backdate_skew_ms = 0; /* none: only a semaphore's backdate lets a claim back */
    assert_int_equal(sl_conf_check(&c, err, sizeof(err)), 0);

    c.idle_timeout_ms = 0;
    assert_int_equal(sl_conf_check(&c, err, sizeof(err)), -1);
    assert_string_equal(err, "limits.idle_timeout: must be longer than 0 (and at most 100 "
                             "years); write a duration like 30s");
    c.idle_timeout_ms = 1;

    c.max_streams = 0;
    assert_int_equal(sl_conf_check(&c, err, sizeof(err)), -1);
    assert_string_equal(err, "limits.max_streams: must be at least 1");
    c.max_streams = 1;

    /* Entries made by hand, as a caller might. */
    c.nsemaphores = 3;
    c.semaphores = calloc(3, sizeof(*c.semaphores));
    c.semaphores[0].name = strdup("a");
    c.semaphores[1].name = strdup("b*");
    c.semaphores[2].name = strdup("a");
    assert_int_equal(sl_conf_check(&c, err, sizeof(err)), -1);
    assert_string_equal(err, "semaphores[2].name: \"a\" is configured twice (also semaphores[0]); "
                             "keep one entry per name");
    c.semaphores[2].name[0] = 'c';
    c.semaphores[1].limit = SL_LIMIT_MAX + 1;
    assert_int_equal(sl_conf_check(&c, err, sizeof(err)), -1);
    assert_string_equal(err, "semaphores[1].limit: 1000000001 is more than the largest limit, "
                             "1000000000");
    c.semaphores[1].limit = SL_LIMIT_MAX;
    c.semaphores[1].strategy = (sl_strategy)3;
    assert_int_equal(sl_conf_check(&c, err, sizeof(err)), -1);
    assert_string_equal(err, "semaphores[1].strategy: is not a strategy; use strict, skip or "
                             "rebalanced");
    c.semaphores[1].strategy = SL_REBALANCED;
    c.semaphores[0].lease_ms = -5;
    assert_int_equal(sl_conf_check(&c, err, sizeof(err)), -1);
    assert_string_equal(err, "semaphores[0].lease: must be 0 (none) or a duration from 100ms to "
                             "100 years, like 30s");
    c.semaphores[0].lease_ms = 5;
    assert_int_equal(sl_conf_check(&c, err, sizeof(err)), -1);
    c.semaphores[0].lease_ms = 500;
    check_rules_by_hand(&c);

    c.ntokens = 2;
    c.tokens = calloc(2, sizeof(*c.tokens));
    c.tokens[0].name = strdup("one");
    c.tokens[0].token = strdup("k1-secret-0123456789");
    c.tokens[0].admin = true;
    c.tokens[1].name = strdup("two");
    c.tokens[1].token = strdup("k2-secret-0123456789");
    assert_int_equal(sl_conf_check(&c, err, sizeof(err)), -1);
    assert_string_equal(err, "tokens[1]: token \"two\" may do nothing; set admin: true, or list "
                             "the name prefixes it may use, like prefixes: [\"team-a/\"] (every "
                             "permission) or read: [\"team-a/\"] (read, claim, operate, "
                             "configure: each on its own)");
    c.tokens[1].nprefixes = 1;
    c.tokens[1].prefixes = calloc(1, sizeof(char *));
    c.tokens[1].prefixes[0] = strdup("team-b/");
    assert_int_equal(sl_conf_check(&c, err, sizeof(err)), 0);

    /* The configuration checked is the caller's: nothing moved or freed. */
    assert_string_equal(c.semaphores[2].name, "c");
    assert_string_equal(c.tokens[1].prefixes[0], "team-b/");

    /* A short buffer is cut and terminated; none at all is fine. */
    c.max_body = 0;
    memset(err, 'x', sizeof(err));
    assert_int_equal(sl_conf_check(&c, err, 6), -1);
    assert_string_equal(err, "limit");
    assert_int_equal(sl_conf_check(&c, NULL, 0), -1);
    sl_conf_free(&c);
}

static void listen_forms(void **state)
{
    (void)state;
    static const char *const good[] = {
        "127.0.0.1:7700",           "0.0.0.0:1",         "localhost:65535",
        "my-host.example.com:8080", "[::1]:7700",        "[::]:80",
        "[::ffff:127.0.0.1]:7700",  "[2001:DB8::1]:443", "h_1:9",
    };
    static const char *const bad[] = {
        "",
        ":7700",
        "127.0.0.1",
        "127.0.0.1:",
        "127.0.0.1:0",
        "127.0.0.1:65536",
        "127.0.0.1:123456",
        "127.0.0.1:77a0",
        "127.0.0.1:+80",
        "127.0.0.1:-1",
        "::1:7700",
        "[::1]",
        "[::1]7700",
        "[]:7700",
        "[x]:7700",
        "[127.0.0.1]:80",
        "host name:7700",
        "http://h:80",
        "h:80/",
        "[::1]:",
        "[::1:7700",
        "127.0.0.1:000080",     /* six digits, though the value is fine */
        "127.0.0.1:4294967376", /* 2^32 + 80: no wrap-around to port 80 */
    };
    sl_conf c;
    char err[512];
    sl_conf_defaults(&c);
    for (size_t i = 0; i < COUNT(good); i++) {
        free(c.listen);
        c.listen = strdup(good[i]);
        if (sl_conf_check(&c, err, sizeof(err)) != 0)
            fail_msg("\"%s\" was refused: %s", good[i], err);
    }
    for (size_t i = 0; i < COUNT(bad); i++) {
        free(c.listen);
        c.listen = strdup(bad[i]);
        if (sl_conf_check(&c, err, sizeof(err)) == 0)
            fail_msg("\"%s\" was accepted", bad[i]);
        assert_memory_equal(err, "listen: ", 8);
    }
    sl_conf_free(&c);
}

static void store_forms(void **state)
{
    (void)state;
    static const char *const good[] = {"sqlite:./x.db",   "sqlite:/var/lib/sluice/sluice.db",
                                       "sqlite:x",        "sqlite::memory:",
                                       "postgres://h/db", "postgresql://u@h:5433/db",
                                       "postgres:host=h dbname=db"};
    static const char *const bad[] = {"",          "sqlite:",     "sqlite",    "mysql://h/db",
                                      "SQLITE:x",  "./sluice.db", " sqlite:x", "postgres://",
                                      "postgres:"};
    sl_conf c;
    char err[512];
    sl_conf_defaults(&c);
    for (size_t i = 0; i < COUNT(good); i++) {
        free(c.store);
        c.store = strdup(good[i]);
        if (sl_conf_check(&c, err, sizeof(err)) != 0)
            fail_msg("\"%s\" was refused: %s", good[i], err);
    }
    for (size_t i = 0; i < COUNT(bad); i++) {
        free(c.store);
        c.store = strdup(bad[i]);
        if (sl_conf_check(&c, err, sizeof(err)) == 0)
            fail_msg("\"%s\" was accepted", bad[i]);
        assert_memory_equal(err, "store: ", 7);
    }
    sl_conf_free(&c);
}

/* Protected mode: off loopback a server needs tokens or insecure_open. */
static void open_off_loopback_needs_tokens(void **state)
{
    (void)state;
    static const char *const loopback[] = {"127.0.0.1:7700", "127.9.8.7:1", "[::1]:7700",
                                           "localhost:7700"};
    static const char *const off[] = {"0.0.0.0:7700", "[::]:7700", "10.0.0.5:7700",
                                      "127.0.0.1.example.com:7700", "localhost.example:7700"};
    sl_conf c;
    char err[512];
    sl_conf_defaults(&c);
    for (size_t i = 0; i < COUNT(loopback); i++) {
        sl__conf_replace_str(&c.listen, loopback[i]);
        if (sl_conf_open_problem(&c))
            fail_msg("%s was refused", loopback[i]);
    }
    for (size_t i = 0; i < COUNT(off); i++) {
        sl__conf_replace_str(&c.listen, off[i]);
        const char *p = sl_conf_open_problem(&c);
        if (!p || !strstr(p, "tokens and TLS") || !strstr(p, "insecure_open: true"))
            fail_msg("%s: %s", off[i], p ? p : "allowed");
    }
    sl_conf_free(&c);
    assert_int_equal(load_text(&c, "listen: 0.0.0.0:7700\ninsecure_open: true\n", err,
                               sizeof(err)), 0);
    assert_null(sl_conf_open_problem(&c));
    sl_conf_free(&c);
    assert_int_equal(load_text(&c, "listen: 0.0.0.0:7700\ntokens:\n  - {name: a, token: "
                                   "s3cret-0123456789, admin: true}\n", err, sizeof(err)), 0);
    assert_null(sl_conf_open_problem(&c));
    sl_conf_free(&c);
}

static void allowed_hosts_forms(void **state)
{
    (void)state;
    sl_conf c, d;
    char err[512] = "";
    assert_int_equal(load_text(&c, "allowed_hosts: [sluice.example.com, \"*\", h_1]\n", err,
                               sizeof(err)), 0);
    assert_int_equal(sl_conf_check(&c, err, sizeof(err)), 0);
    assert_int_equal(c.nallowed_hosts, 3);
    assert_string_equal(c.allowed_hosts[1], "*");
    sl__conf_dup(&d, &c);
    assert_string_equal(d.allowed_hosts[0], "sluice.example.com");
    sl_conf_free(&d);
    sl_conf_free(&c);
    assert_int_equal(load_text(&c, "allowed_hosts: [\"sluice.example.com:7700\"]\n", err,
                               sizeof(err)), -1);
    assert_non_null(strstr(err, "allowed_hosts[0]: \"sluice.example.com:7700\" is not a host name; "
                                "write the name clients put in the URL, without scheme or port"));
    sl_conf_free(&c);
}

static void log_level_names(void **state)
{
    (void)state;
    static const struct {
        const char *s;
        sl_log_level l;
    } ok[] = {{"error", SL_LOG_ERROR},
              {"warn", SL_LOG_WARN},
              {"info", SL_LOG_INFO},
              {"debug", SL_LOG_DEBUG}};
    for (size_t i = 0; i < COUNT(ok); i++) {
        sl_log_level l = (sl_log_level)99;
        assert_int_equal(sl_log_level_parse(ok[i].s, &l), 0);
        assert_int_equal(l, ok[i].l);
    }
    static const char *const bad[] = {"",      "ERROR",  "Warn", "warning", "information",
                                      "trace", "debug ", "0"};
    for (size_t i = 0; i < COUNT(bad); i++) {
        sl_log_level l = (sl_log_level)99;
        assert_int_equal(sl_log_level_parse(bad[i], &l), -1);
        assert_int_equal(l, 99);
    }
    sl_log_level l = (sl_log_level)99;
    assert_int_equal(sl_log_level_parse(NULL, &l), -1);
}

/* tls: the four keys load; a version other than 1.2 or 1.3, a cert without
 * its key, or client_ca without a cert are refused with what to write. */
static void tls_section_loads_and_checks(void **state)
{
    (void)state;
    sl_conf c;
    char err[512];
    assert_int_equal(load_text(&c, "tls:\n  cert: /s.pem\n  key: /s.key\n"
                                   "  client_ca: /ca.pem\n  min_version: \"1.3\"\n",
                               err, sizeof(err)),
                     0);
    assert_string_equal(c.tls_cert, "/s.pem");
    assert_string_equal(c.tls_key, "/s.key");
    assert_string_equal(c.tls_client_ca, "/ca.pem");
    assert_int_equal(c.tls_min_version, 13);
    assert_int_equal(sl_conf_check(&c, err, sizeof(err)), 0);
    sl_conf_free(&c);

    assert_int_not_equal(load_text(&c, "tls:\n  min_version: \"1.1\"\n", err, sizeof(err)), 0);
    assert_non_null(strstr(err, "tls.min_version"));
    assert_non_null(strstr(err, "use 1.2 or 1.3"));
    sl_conf_free(&c);

    assert_int_not_equal(load_text(&c, "tls:\n  cert: /s.pem\n", err, sizeof(err)), 0);
    assert_non_null(strstr(err, "tls.key"));
    sl_conf_free(&c);

    assert_int_not_equal(load_text(&c, "tls:\n  client_ca: /ca.pem\n", err, sizeof(err)), 0);
    assert_non_null(strstr(err, "tls.cert"));
    sl_conf_free(&c);

    sl_conf_defaults(&c);
    assert_int_equal(c.tls_min_version, 12);
    assert_null(c.tls_cert);
    sl_conf_free(&c);
}

/* cluster: the four keys load; a CA without TLS on, a cert without its key
 * are refused; shared mode with tokens or TLS and nothing to prove the
 * leader with is refused unless cluster.insecure says so (F10). */
static void cluster_section_loads_and_checks(void **state)
{
    (void)state;
    sl_conf c;
    char err[512];
    static const char tls[] = "store: postgres://u@h/db\ntls:\n  cert: /s.pem\n  key: /s.key\n";
    char text[512];
    snprintf(text, sizeof(text), "%scluster:\n  ca: /ca.pem\n  cert: /c.pem\n  key: /c.key\n",
             tls);
    assert_int_equal(load_text(&c, text, err, sizeof(err)), 0);
    assert_string_equal(c.cluster_ca, "/ca.pem");
    assert_string_equal(c.cluster_cert, "/c.pem");
    assert_string_equal(c.cluster_key, "/c.key");
    assert_false(c.cluster_insecure);
    assert_int_equal(sl_conf_check(&c, err, sizeof(err)), 0);
    assert_null(sl_conf_cluster_problem(&c));
    free(c.cluster_ca); /* TLS without a CA to prove leaders with */
    c.cluster_ca = NULL;
    assert_non_null(strstr(sl_conf_cluster_problem(&c), "without cluster.ca"));
    c.cluster_insecure = true;
    assert_null(sl_conf_cluster_problem(&c));
    sl_conf_free(&c);

    assert_int_not_equal(load_text(&c, "cluster:\n  ca: /ca.pem\n", err, sizeof(err)), 0);
    assert_non_null(strstr(err, "cluster.ca"));
    assert_non_null(strstr(err, "needs TLS on"));
    sl_conf_free(&c);
    snprintf(text, sizeof(text), "%scluster:\n  cert: /c.pem\n", tls);
    assert_int_not_equal(load_text(&c, text, err, sizeof(err)), 0);
    assert_non_null(strstr(err, "cluster.key"));
    sl_conf_free(&c);
    assert_int_not_equal(load_text(&c, "cluster:\n  insecure: maybe\n", err, sizeof(err)), 0);
    assert_non_null(strstr(err, "cluster.insecure"));
    sl_conf_free(&c);

    /* Tokens on PostgreSQL over plain HTTP: refused; on SQLite: no relays. */
    static const char tokens[] =
        "tokens:\n  - {name: a, token: s-secret-0123456789, admin: true}\n";
    snprintf(text, sizeof(text), "store: postgres://u@h/db\n%s", tokens);
    assert_int_equal(load_text(&c, text, err, sizeof(err)), 0);
    assert_non_null(strstr(sl_conf_cluster_problem(&c), "--cluster-insecure"));
    sl_conf_free(&c);
    snprintf(text, sizeof(text), "store: postgres://u@h/db\ncluster: {insecure: true}\n%s",
             tokens);
    assert_int_equal(load_text(&c, text, err, sizeof(err)), 0);
    assert_null(sl_conf_cluster_problem(&c));
    sl_conf_free(&c);
    assert_int_equal(load_text(&c, tokens, err, sizeof(err)), 0);
    assert_null(sl_conf_cluster_problem(&c));
    sl_conf_free(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(tls_section_loads_and_checks),
        cmocka_unit_test(cluster_section_loads_and_checks),
        cmocka_unit_test(defaults_are_documented_values),
        cmocka_unit_test(full_file_loads_every_value),
        cmocka_unit_test(scheduling_rules_load),
        cmocka_unit_test(token_permissions_load),
        cmocka_unit_test(omitted_sections_keep_defaults),
        cmocka_unit_test(documented_example_loads),
        cmocka_unit_test(tokens_by_hash_or_certificate),
        cmocka_unit_test(values_in_every_form),
        cmocka_unit_test(each_error_says_what_where_and_how),
        cmocka_unit_test(errors_never_show_a_secret),
        cmocka_unit_test(file_problems),
        cmocka_unit_test(short_error_buffers),
        cmocka_unit_test(loads_replace_and_failures_keep),
        cmocka_unit_test(token_quotas_load),
        cmocka_unit_test(libcyaml_prints_nothing),
        cmocka_unit_test(check_without_a_file),
        cmocka_unit_test(listen_forms),
        cmocka_unit_test(store_forms),
        cmocka_unit_test(log_level_names),
        cmocka_unit_test(open_off_loopback_needs_tokens),
        cmocka_unit_test(allowed_hosts_forms),
    };
    return cmocka_run_group_tests(tests, make_dir, remove_dir);
}
