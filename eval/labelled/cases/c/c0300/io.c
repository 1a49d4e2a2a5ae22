#include <stdio.h>
#include <string.h>

void set_label(char label[20], const char *title, int n)
{
    sprintf(label, "%s #%d", title, n);
}
