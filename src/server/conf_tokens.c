/* conf_tokens.c - the tokens of the configuration file. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf_load.h"

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
        if (rt->prefixes_count) {
            t->prefixes = sl__conf_xcalloc(rt->prefixes_count, sizeof(char *));
            t->nprefixes = rt->prefixes_count;
            for (size_t j = 0; j < rt->prefixes_count; j++)
                t->prefixes[j] = sl__conf_xstrdup(rt->prefixes[j] ? rt->prefixes[j] : "");
        }
    }
    return 0;
}
