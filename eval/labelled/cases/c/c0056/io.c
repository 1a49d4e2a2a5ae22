#include <ctype.h>
#include <string.h>

char *capitalized(const char *s)
{
    char *out = strdup(s);
    out[0] = (char)toupper((unsigned char)out[0]);
    return out;
}
