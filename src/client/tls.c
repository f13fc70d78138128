/* tls.c - what a failed TLS handshake means, in words.
 *
 * curl's verdict on a transfer to an https:// server becomes
 * SL_CLIENT_ECONNECT with err->code saying that trying again cannot mend it
 * (include/sluice/client.h): "tls_verify" (the server's certificate was not
 * accepted), "tls_refused" (the server refused this client's certificate,
 * or its lack of one), "tls_protocol" (the server does not answer in TLS),
 * "tls_files" (a CA file, a certificate or a key that cannot be used). The
 * message names the file in use and the flag and variable that mend it, in
 * place of the "is sluiced running?" of a server out of reach.
 *
 * A handshake cut short (an end of file, a reset: a server that stops) is
 * not one of them: the caller retries it as any connection failure. */
#include "client_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static int tls_fail(sl_client_error *err, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int tls_fail(sl_client_error *err, const char *code, const char *fmt, ...)
{
    if (!err)
        return SL_CLIENT_ECONNECT;
    sl__err_clear(err);
    err->rc = SL_CLIENT_ECONNECT;
    snprintf(err->code, sizeof(err->code), "%s", code);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->message, sizeof(err->message), fmt, ap);
    va_end(ap);
    return SL_CLIENT_ECONNECT;
}

static bool says(const char *why, const char *what)
{
    return strstr(why, what) != NULL;
}

static int verify_failed(const sl_client *c, const char *why, sl_client_error *err)
{
    if (c->cacert)
        return tls_fail(err, "tls_verify",
                        "the certificate of %s was not accepted: %s; it was checked against the "
                        "CA file %s: give the CA that signed the server's certificate",
                        c->server, why, c->cacert);
    return tls_fail(err, "tls_verify",
                    "the certificate of %s was not accepted: %s; it was checked against the "
                    "system's CAs: give the CA that signed it with --cacert (SLUICE_CACERT)",
                    c->server, why);
}

/* An alert from the server about this client's certificate. */
static int refused(const sl_client *c, const char *why, sl_client_error *err)
{
    if (c->cert)
        return tls_fail(err, "tls_refused",
                        "%s refused this client's certificate %s in the TLS handshake (%s): "
                        "give a certificate signed by a CA of its tls.client_ca, within its dates",
                        c->server, c->cert, why);
    if (says(why, "certificate required"))
        return tls_fail(err, "tls_refused",
                        "%s refused this client in the TLS handshake (%s): it asks for a client "
                        "certificate; give one of its tls.client_ca with --cert and --key "
                        "(SLUICE_CERT, SLUICE_KEY)",
                        c->server, why);
    return tls_fail(err, "tls_refused",
                    "%s refused this client in the TLS handshake (%s): if it asks for client "
                    "certificates, give one of its tls.client_ca with --cert and --key "
                    "(SLUICE_CERT, SLUICE_KEY)",
                    c->server, why);
}

int sl__tls_failure(const sl_client *c, CURLcode r, sl_client_error *err)
{
    const char *why = c->curl_err[0] ? c->curl_err : curl_easy_strerror(r);
    switch (r) {
    case CURLE_PEER_FAILED_VERIFICATION:
        return verify_failed(c, why, err);
    case CURLE_SSL_CACERT_BADFILE:
        return tls_fail(err, "tls_files",
                        "cannot use the CA file %s: %s; give a PEM file of the CA certificates "
                        "that signed the server's certificate",
                        c->cacert ? c->cacert : "(the system's)", why);
    case CURLE_SSL_CERTPROBLEM:
        return tls_fail(err, "tls_files",
                        "cannot use the client certificate %s with %s%s: %s; give the PEM "
                        "certificate and the private key that belongs to it",
                        c->cert ? c->cert : "", c->key ? "the key " : "its key in that file",
                        c->key ? c->key : "", why);
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
        if (says(why, "wrong version number") || says(why, "packet length too long") ||
            says(why, "record layer failure"))
            return tls_fail(err, "tls_protocol",
                            "%s does not answer in TLS (%s): is it served over plain HTTP? "
                            "then use an http:// URL",
                            c->server, why);
        if (says(why, "alert") && (says(why, "certificate") || says(why, "unknown ca") ||
                                   says(why, "handshake failure") || says(why, "access denied")))
            return refused(c, why, err);
        return SL_CLIENT_OK;
    default:
        return SL_CLIENT_OK;
    }
}
