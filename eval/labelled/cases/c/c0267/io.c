#include <stdio.h>
#include <string.h>

FILE *open_log(void)
{
    char mode[4];

    strcpy(mode, "a");
    return fopen("/var/log/tool.log", mode);
}
