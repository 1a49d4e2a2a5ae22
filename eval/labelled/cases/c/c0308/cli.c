#include <stdio.h>

void welcome(const char *user)
{
    char buf[64];

    snprintf(buf, sizeof buf, "Welcome back, %s!", user);
    puts(buf);
}
