#include <stdio.h>

void show_banner(const char *msg)
{
    printf("%s\n", msg);
}

int main(int argc, char **argv)
{
    show_banner(argc > 1 ? argv[1] : "hello");
    return 0;
}
