#include <stdio.h>
#include <stdlib.h>

int ping_host(const char *host)
{
    char cmd[256];

    snprintf(cmd, sizeof cmd, "ping -c 1 %s", host);
    return system(cmd);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s HOST\n", argv[0]);
        return 2;
    }
    return ping_host(argv[1]) == 0 ? 0 : 1;
}
