#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    const char *param = argc > 1 ? argv[1] : "";
    const char *bar = "";
    char cmd[256];
    int num = 86;
    bar = (7 * 18) - num > 200 ? "fixed_value" : param;
    snprintf(cmd, sizeof cmd, "ping -c 1 %s", bar);
    return system(cmd);
}
