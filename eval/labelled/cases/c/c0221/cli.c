#include <string.h>

int set_name(char dst[32], const char *src)
{
    if (strlen(src) >= 32)
        return -1;
    strcpy(dst, src);
    return 0;
}
