/* status.c - GET /healthz: whether the server is up, and its counts. */
#include <stdlib.h>

#include "client_int.h"

int sl_client_status_get(sl_client *c, sl_client_status **out, sl_client_error *err)
{
    sl__err_clear(err);
    if (!c || !out)
        return sl__err_set(err, SL_CLIENT_EINVAL, "the client and the result must not be NULL");
    *out = NULL;
    json_t *root = NULL;
    int rc = sl__http_json(c, "GET", "/healthz", NULL, 0, &root, err);
    if (rc == SL_CLIENT_OK) {
        sl_client_status *st = malloc(sizeof(*st));
        if (!st)
            rc = sl__err_oom(err);
        else if ((rc = sl__parse_status(root, st, err)) != SL_CLIENT_OK)
            free(st);
        else
            *out = st;
    }
    json_decref(root);
    return rc;
}
