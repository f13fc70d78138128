/* shared_smoke.c - libsluice.so as a user links it: only the public header,
 * only the exported names. Makes a client from options, checks what it
 * reports, and that a server nobody listens on is ECONNECT with a message
 * naming it. Exits non-zero on any failure. */
#include <stdio.h>
#include <string.h>

#include <sluice/client.h>

static int failures;

static void check(int ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "shared_smoke: FAILED: %s\n", what);
        failures++;
    }
}

int main(void)
{
    sl_client_options opts = {.server = "127.0.0.1:1/", .connect_timeout_ms = 2000};
    sl_client *c = NULL;
    sl_client_error err;
    check(sl_client_new(&opts, &c, &err) == SL_CLIENT_OK, "sl_client_new");
    if (!c)
        return 1;
    check(strcmp(sl_client_server(c), "http://127.0.0.1:1") == 0, "server URL normalised");
    sl_client_status *st = NULL;
    int rc = sl_client_status_get(c, &st, &err);
    check(rc == SL_CLIENT_ECONNECT, "status against port 1 is ECONNECT");
    check(err.rc == rc && err.status == 0, "err->rc and err->status");
    check(strstr(err.message, "http://127.0.0.1:1") != NULL, "message names the server");
    check(st == NULL, "no result on failure");
    check(strcmp(sl_client_strerror(SL_CLIENT_ECONNECT), "the server could not be reached") == 0,
          "strerror");
    sl_client_free(c);
    if (failures == 0)
        printf("shared_smoke: ok\n");
    return failures ? 1 : 0;
}
