#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *xmalloc(size_t n)
{
    void *p = malloc(n);
    if (p == NULL) {
        perror("malloc");
        exit(1);
    }
    return p;
}

char *join(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    char *out = xmalloc(la + lb + 1);
    memcpy(out, a, la);
    memcpy(out + la, b, lb + 1);
    return out;
}
