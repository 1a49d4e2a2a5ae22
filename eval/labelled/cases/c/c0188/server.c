#include <stdio.h>

void set_label(char label[20], int n)
{
    sprintf(label, "item #%d", n % 1000);
}
