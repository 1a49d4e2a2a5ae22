#include <stdio.h>
#include <string.h>

long count_lines(const char *path)
{
    char cmdline[512] = "wc -l ";
    long n = -1;
    FILE *fp;

    strncat(cmdline, path, sizeof cmdline - strlen(cmdline) - 1);
    fp = popen(cmdline, "r");
    if (fp == NULL)
        return -1;
    if (fscanf(fp, "%ld", &n) != 1)
        n = -1;
    pclose(fp);
    return n;
}
