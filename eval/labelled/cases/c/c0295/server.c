#include <stdarg.h>
#include <stdio.h>

static void log_error(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    fputs("error: ", stderr);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
}

int check(int fd)
{
    if (fd < 0) {
        log_error("invalid descriptor %d\n", fd);
        return -1;
    }
    return 0;
}
