/* sha256.c — SHA-256 of memory and of files, through libcrypto. */
#include "asn/core.h"

#include <errno.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void asn_sha256(const void *data, size_t n, uint8_t out[32])
{
    unsigned int len = 32;
    EVP_Digest(data, n, out, &len, EVP_sha256(), NULL);
}

static void to_hex(const uint8_t *d, size_t n, char *out)
{
    static const char hx[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = hx[d[i] >> 4];
        out[2 * i + 1] = hx[d[i] & 15];
    }
    out[2 * n] = 0;
}

void asn_sha256_hex(const void *data, size_t n, char out[65])
{
    uint8_t d[32];
    asn_sha256(data, n, d);
    to_hex(d, 32, out);
}

int asn_sha256_file(const char *path, char out[65], asn_err *e)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return asn_err_set(e, "%s: %s", path, strerror(errno));
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    EVP_DigestInit_ex(ctx, EVP_sha256(), NULL);
    enum { CHUNK = 1 << 16 };
    char *buf = asn_xmalloc(CHUNK);
    size_t n;
    while ((n = fread(buf, 1, CHUNK, f)) > 0)
        EVP_DigestUpdate(ctx, buf, n);
    free(buf);
    int bad = ferror(f);
    fclose(f);
    uint8_t d[32];
    unsigned int len = 32;
    EVP_DigestFinal_ex(ctx, d, &len);
    EVP_MD_CTX_free(ctx);
    if (bad)
        return asn_err_set(e, "%s: read error", path);
    to_hex(d, 32, out);
    return 0;
}
