/* token.c - `sluice token new NAME [--admin] [--prefix P]...`: a new token
 * for the server's file (docs/cli.md, docs/security.md "Secrets at rest").
 *
 * It prints a random secret (32 bytes from getrandom, as 64 hex digits: the
 * shape of `openssl rand -hex 32`) and the entry for sluiced.yaml's tokens
 * with only the secret's SHA-256 (token_sha256), so the file never holds
 * the secret. Nothing is sent to the server: the command works offline,
 * and the operator adds the entry and reloads the server.
 *
 * The hash is OpenSSL's SHA-256, the one the server compares with
 * (src/server/secret.c). The command links libcrypto itself rather than
 * asking libsluice: hashing a secret for a file is no part of the client's
 * protocol, and the server's own code is out of the CLI's reach (cli ->
 * client only); libcrypto is a system library like the libyaml that
 * `sluice import` links. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include <openssl/evp.h>

#include "cli.h"

#define SECRET_BYTES 32
#define PREFIXES_MAX 64

enum { TF_ADMIN = 1, TF_PREFIX };

static const cli_flag new_flags[] = {
    {"admin", false, TF_ADMIN},
    {"prefix", true, TF_PREFIX},
    {0},
};

static void hex(const unsigned char *b, size_t n, char *out)
{
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[b[i] >> 4];
        out[2 * i + 1] = digits[b[i] & 15];
    }
    out[2 * n] = '\0';
}

static bool random_bytes(unsigned char *b, size_t n)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = getrandom(b + got, n - got, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return false;
        got += (size_t)r;
    }
    return true;
}

/* A YAML double-quoted scalar: the names and prefixes are printable ASCII
 * (checked below), so only '"' and '\' need escaping. */
static void put_quoted(const char *s)
{
    putchar('"');
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            putchar('\\');
        putchar(*s);
    }
    putchar('"');
}

/* The server's rule for a token's name and a prefix: visible ASCII (and
 * spaces in a name), at most 253; the server judges the rest. */
static bool printable(const char *s, bool space)
{
    size_t n = strlen(s);
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch > 0x7e || ch < (space ? 0x20 : 0x21))
            return false;
    }
    return n > 0 && n <= 253;
}

static void print_entry(const char *name, const char *sha, bool admin, const char **prefixes, int n)
{
    fputs("  - name: ", stdout);
    put_quoted(name);
    printf("\n    token_sha256: \"%s\"\n", sha);
    if (admin) {
        puts("    admin: true");
        return;
    }
    fputs("    prefixes: [", stdout);
    for (int i = 0; i < n; i++) {
        fputs(i ? ", " : "", stdout);
        put_quoted(prefixes[i]);
    }
    puts("]");
}

static int token_new(cli *c, const char *name, bool admin, const char **prefixes, int n)
{
    if (!printable(name, true))
        return cli_usage(c,
                         "'%s' is not a token name: use 1 to 253 visible ASCII characters, "
                         "like ci or team-a",
                         name);
    /* The server refuses these two in its file: events name them as actors. */
    if (strcmp(name, "sluice") == 0 || strcmp(name, "anonymous") == 0)
        return cli_usage(c,
                         "'%s' names the server itself in events (and anonymous requests): "
                         "sluiced refuses it as a token's name; give another, like ci",
                         name);
    if (admin == (n > 0))
        return cli_usage(c, admin ? "--admin and --prefix do not go together: an admin token "
                                    "may use every name"
                                  : "say what the token may do: --admin, or --prefix P (one "
                                    "or more) for the names it may use");
    for (int i = 0; i < n; i++)
        if (!printable(prefixes[i], false))
            return cli_usage(c,
                             "--prefix '%s' is not a name prefix: use visible ASCII "
                             "without spaces, like team-a/",
                             prefixes[i]);
    unsigned char secret[SECRET_BYTES], md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    char secret_hex[2 * SECRET_BYTES + 1], sha_hex[2 * 32 + 1];
    if (!random_bytes(secret, sizeof(secret))) {
        fprintf(stderr, "sluice: cannot read random bytes (getrandom: %s)\n", strerror(errno));
        return CLI_EXIT_SERVER;
    }
    hex(secret, sizeof(secret), secret_hex);
    if (EVP_Digest(secret_hex, strlen(secret_hex), md, &mdlen, EVP_sha256(), NULL) != 1 ||
        mdlen != 32) {
        fputs("sluice: libcrypto has no SHA-256\n", stderr);
        return CLI_EXIT_SERVER;
    }
    hex(md, 32, sha_hex);
    puts(secret_hex);
    print_entry(name, sha_hex, admin, prefixes, n);
    fflush(stdout);
    fputs("The first line is the secret, for the client (--token or SLUICE_TOKEN): it is kept\n"
          "nowhere, so store it now. The lines after it are the entry for tokens: in\n"
          "sluiced.yaml, with only the secret's SHA-256; add it and reload the server.\n",
          stderr);
    return 0;
}

int cli_token(cli *c, int argc, char **argv)
{
    const char *pos[2], *prefixes[PREFIXES_MAX], *val = NULL;
    int n = 0, np = 0, i = 0;
    bool admin = false;
    for (;;) {
        int r = cli_flag_next(c, new_flags, argc, argv, &i, &val);
        if (r == CLI_HELP)
            return 0;
        if (r == CLI_BAD)
            return CLI_EXIT_USAGE;
        if (r == CLI_END)
            break;
        if (r == CLI_ARG) {
            if (n == 2)
                return cli_usage(c, "too many arguments: sluice token new NAME");
            pos[n++] = val;
        } else if (r == TF_ADMIN) {
            admin = true;
        } else if (np == PREFIXES_MAX) {
            return cli_usage(c, "at most %d --prefix", PREFIXES_MAX);
        } else {
            prefixes[np++] = val;
        }
    }
    if (n == 0)
        return cli_usage(c, "say what to do: sluice token new NAME");
    if (strcmp(pos[0], "new") != 0)
        return cli_usage(c, "no command 'token %s': use token new NAME", pos[0]);
    if (n < 2)
        return cli_usage(c, "sluice token new needs the token's NAME");
    if (c->json)
        return cli_usage(c, "sluice token new prints a secret and YAML lines; it has no --json");
    return token_new(c, pos[1], admin, prefixes, np);
}
