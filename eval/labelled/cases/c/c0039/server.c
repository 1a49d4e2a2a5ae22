#include <stdio.h>

void welcome(const char *user)
{
    char buf[64];

    sprintf(buf, "Welcome back, %s!", user);
    puts(buf);
}
