#include <openssl/sha.h>
#include <string.h>

void content_digest(const char *data, unsigned char out[SHA256_DIGEST_LENGTH])
{
    SHA256((const unsigned char *)data, strlen(data), out);
}
