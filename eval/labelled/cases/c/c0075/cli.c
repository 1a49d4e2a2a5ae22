#include <openssl/md5.h>
#include <stdio.h>
#include <string.h>

void password_digest(const char *pw, char out[33])
{
    unsigned char digest[MD5_DIGEST_LENGTH];
    int i;

    MD5((const unsigned char *)pw, strlen(pw), digest);
    for (i = 0; i < MD5_DIGEST_LENGTH; i++)
        sprintf(out + 2 * i, "%02x", digest[i]);
}
