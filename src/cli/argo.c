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
#include "argo.h"

const char argo_name_rule[] = "1 to 253 of A-Z a-z 0-9 . _ - / : =, no empty, . or .. segment";

int argo_parse_args(cli *c, const cli_flag *flags, int argc, char **argv, const char **pos,
                    int *n, const char **ns, const char **tmpl, bool *apply)
{
    int i = 0;
    const char *val = NULL;
    *n = 0;
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
            *ns = val;
        else if (r == ARGO_TEMPLATE)
            *tmpl = val;
        else if (r == ARGO_APPLY)
            *apply = true;
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

