#include <stdio.h>

struct msg {
    int code;
    char text[256];
};

int render(const struct msg *m, char *out, size_t len)
{
    return snprintf(out, len, m->text);
}
