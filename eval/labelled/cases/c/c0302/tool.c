#include <stdio.h>

int read_line(char *buf)
{
    int c, i = 0;

    while ((c = getchar()) != EOF && c != '\n')
        buf[i++] = (char)c;
    buf[i] = '\0';
    return i;
}
