/* conf_tokens.c - the tokens of the configuration file. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf_load.h"

static sl_prefix_list prefix_list(char *const *v, unsigned count)
{
    sl_prefix_list l = {count ? sl__conf_xcalloc(count, sizeof(char *)) : NULL, count};
    for (size_t j = 0; j < count; j++)
        l.v[j] = sl__conf_xstrdup(v[j] ? v[j] : "");
    return l;
}

/* F7: read, claim, operate and configure, each a list of prefixes, and the
 * ceiling on its claims' priority. */
static int conv_perms(loader *ld, const raw_token *rt, size_t i, sl_conf_token *t)
{
    t->perms[SL_PERM_READ] = prefix_list(rt->read, rt->read_count);
    t->perms[SL_PERM_CLAIM] = prefix_list(rt->claim, rt->claim_count);
    t->perms[SL_PERM_OPERATE] = prefix_list(rt->operate, rt->operate_count);
    t->perms[SL_PERM_CONFIGURE] = prefix_list(rt->configure, rt->configure_count);
    if (!rt->max_priority)
        return 0;
    char path[PATH_CAP];
    uint64_t v = 0;
    snprintf(path, sizeof(path), "tokens[%zu].max_priority", i);
    if (sl__conf_count(ld, path, rt->max_priority, INT32_MAX, "100", &v) != 0)
        return -1;
    t->priority_capped = true;
    t->max_priority = (int32_t)v;
    return 0;
}

int sl__conf_quotas(loader *ld, const char *at, const raw_quotas *q, uint64_t zero,
                    uint64_t *out)
{
    char path[PATH_CAP];
    for (size_t k = 0; k < SL_QUOTA_COUNT; k++) {
        if (!q->v[k])
            continue;
        snprintf(path, sizeof(path), "%s.%s", at, sl_quota_names[k]);
        if (sl__conf_count(ld, path, q->v[k], UINT32_MAX, "100, or 0 for none", &out[k]) != 0)
            return -1;
        if (out[k] == 0)
            out[k] = zero;
    }
    return 0;
}

int sl__conf_tokens(loader *ld, const raw_conf *r, sl_conf *n)
{
    char path[PATH_CAP];
    sl__conf_tokens_free(n->tokens, n->ntokens);
    n->ntokens = r->tokens_count;
    n->tokens = sl__conf_xcalloc(r->tokens_count, sizeof(*n->tokens));
    for (size_t i = 0; i < r->tokens_count; i++) {
        const raw_token *rt = &r->tokens[i];
        sl_conf_token *t = &n->tokens[i];
        t->name = sl__conf_xstrdup(rt->name ? rt->name : "");
        t->token = sl__conf_xstrdup(rt->token ? rt->token : "");
        snprintf(path, sizeof(path), "tokens[%zu].admin", i);
        if (rt->admin && sl__conf_bool(ld, path, rt->admin, &t->admin) != 0)
            return -1;
        snprintf(path, sizeof(path), "tokens[%zu].quotas", i);
        if (rt->quotas && sl__conf_quotas(ld, path, rt->quotas, SL_QUOTA_NONE, t->quotas) != 0)
            return -1;
        if (rt->prefixes_count) {
            t->prefixes = sl__conf_xcalloc(rt->prefixes_count, sizeof(char *));
            t->nprefixes = rt->prefixes_count;
            for (size_t j = 0; j < rt->prefixes_count; j++)
                t->prefixes[j] = sl__conf_xstrdup(rt->prefixes[j] ? rt->prefixes[j] : "");
        }
        if (conv_perms(ld, rt, i, t) != 0)
            return -1;
    }
    return 0;
}
