/* argo.c - bringing Argo Workflows' locks over (docs/cli.md, "Coming from
 * Argo Workflows"):
 *
 *   sluice import argo [--namespace NS] [--apply] FILE...
 *       Argo's semaphore ConfigMaps as sluice semaphores named as Argo
 *       names them (NS/ConfigMap/NAME/KEY): printed as a sluiced.yaml
 *       fragment, or configured on the server with --apply.
 *   sluice argo flags [--namespace NS] [--template NAME] FILE
 *       a workflow's synchronization block as `sluice run` flags.
 *
 * The YAML is read by argo_yaml.c (libyaml's document API); the server is
 * reached through libsluice alone (sl_client_semaphore_set). Every input
 * error names FILE:LINE:COLUMN and exits with the usage status. */
#include <stdint.h>
#include <string.h>
#include <strings.h>

#include "argo.h"

const char argo_name_rule[] = "1 to 253 of A-Z a-z 0-9 . _ - / : =, no empty, . or .. segment";

int argo_parse_args(cli *c, const cli_flag *flags, int argc, char **argv, const char **pos,
                    int *n, argo_opts *o)
{
    int i = 0;
    const char *val = NULL;
    *n = 0;
    o->configmaps = cli_xmalloc((size_t)(argc + 1) * sizeof(*o->configmaps));
    for (;;) {
        int r = cli_flag_next(c, flags, argc, argv, &i, &val);
        if (r == CLI_HELP)
            return -1;
        if (r == CLI_BAD)
            return c->usage_status;
        if (r == CLI_END)
            break;
        if (r == CLI_ARG)
            pos[(*n)++] = val;
        else if (r == ARGO_NAMESPACE && !*val)
            return cli_usage(c, "--namespace needs a namespace");
        else if (r == ARGO_NAMESPACE)
            o->ns = val;
        else if (r == ARGO_TEMPLATE)
            o->tmpl = val;
        else if (r == ARGO_APPLY)
            o->apply = true;
        else if (r == ARGO_STRATEGY_KEYS)
            o->strategy_keys = true;
        else if (r == ARGO_CONFIGMAP && !*val)
            return cli_usage(c, "--configmap needs a ConfigMap's name");
        else if (r == ARGO_CONFIGMAP)
            o->configmaps[o->nconfigmaps++] = val;
    }
    for (; i < argc; i++) /* after "--": files, even one called "-x" */
        pos[(*n)++] = argv[i];
    return 0;
}

const char *argo_kind(const ay_obj *o)
{
    return ay_get_str(o->doc, o->node, "kind");
}

const char *argo_name(const ay_obj *o)
{
    yaml_node_t *meta = ay_get(o->doc, o->node, "metadata");
    const char *name = ay_get_str(o->doc, meta, "name");
    return name ? name : ay_get_str(o->doc, meta, "generateName");
}


/* The edit distance of a and b (both short: keys of a YAML mapping), or
 * a large number when either is long. */
static size_t distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b), row[33];
    if (la > 32 || lb > 32)
        return SIZE_MAX;
    for (size_t j = 0; j <= lb; j++)
        row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t up = row[j];
            size_t best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best)
                best = up + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}

/* The known key closest to key, when a slip of a letter or two (or of
 * case) would explain it; else NULL. On a tie the longer (mutexs:
 * mutexes rather than mutex). */
static const char *closest(const char *key, const char *const *known)
{
    const char *best = NULL;
    size_t best_d = 3;
    for (const char *const *k = known; *k; k++) {
        size_t d = strcasecmp(key, *k) == 0 ? 0 : distance(key, *k);
        if (d < best_d || (best && d == best_d && strlen(*k) > strlen(best))) {
            best = *k;
            best_d = d;
        }
    }
    return best;
}

void argo_check_keys(const ay_file *f, yaml_document_t *d, const yaml_node_t *map,
                     const char *what, const char *const *known)
{
    if (!ay_is_map(map))
        return;
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top;
         p++) {
        yaml_node_t *kn = yaml_document_get_node(d, p->key);
        const char *key = ay_str(kn);
        bool found = false;
        for (const char *const *k = known; key && *k && !found; k++)
            found = strcmp(key, *k) == 0;
        if (found)
            continue;
        cli_buf list = {0};
        for (const char *const *k = known; *k; k++)
            cli_buf_addf(&list, "%s%s", k == known ? "" : ", ", *k);
        const char *near = key ? closest(key, known) : NULL;
        ay_warn(f, kn, "%.100s is not a key of %s: ignored (%s%s%sthe keys are %s)",
                key ? key : "this key", what, near ? "did you mean " : "", near ? near : "",
                near ? "? " : "", list.s);
        cli_buf_free(&list);
    }
}
