#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    const char *param = argc > 1 ? argv[1] : "";
    const char *bar = "";
    char cmd[256];
    const char *guess = "ABC";
    char target = guess[1];
    switch (target) {
    case 'A':
        bar = param;
        break;
    case 'B':
        bar = "fixed_value";
        break;
    case 'C':
    case 'D':
        bar = param;
        break;
    default:
        bar = "other_value";
        break;
    }
    snprintf(cmd, sizeof cmd, "ping -c 1 %s", bar);
    return system(cmd);
}
