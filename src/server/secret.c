/* secret.c - token secrets as their SHA-256 (docs/security.md, "Secrets at
 * rest").
 *
 * The server keeps and compares only the SHA-256 of a token's secret: a
 * clear `token:` is hashed when the file is read, a `token_sha256:` is
 * taken as it is, and a presented bearer token is hashed before it is
 * compared. So the file need hold no clear secret, and the comparison
 * takes the same time whatever the guess (both sides are 64 digits). */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "conf.h"

void sl_secret_sha256(const char *s, size_t n, char out[SL_SHA256_HEX])
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    static const char hex[] = "0123456789abcdef";
    if (EVP_Digest(s, n, md, &len, EVP_sha256(), NULL) != 1 || len != 32)
        abort(); /* no SHA-256 in libcrypto: nothing can be checked */
    for (unsigned i = 0; i < 32; i++) {
        out[2 * i] = hex[md[i] >> 4];
        out[2 * i + 1] = hex[md[i] & 15];
    }
    out[64] = '\0';
}

bool sl_secret_sha256_valid(const char *s)
{
    if (!s || strlen(s) != 64)
        return false;
    for (size_t i = 0; i < 64; i++)
        if (!isxdigit((unsigned char)s[i]))
            return false;
    return true;
}

bool sl_secret_same_hash(const char *a, const char *b)
{
    return a && b && strlen(a) == 64 && strlen(b) == 64 && CRYPTO_memcmp(a, b, 64) == 0;
}
