#include <stddef.h>
#include <sys/random.h>

int make_key(unsigned char *key, size_t len)
{
    return getrandom(key, len, 0) == (ssize_t)len ? 0 : -1;
}
