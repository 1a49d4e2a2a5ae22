#include <stdio.h>

int main(int argc, char **argv)
{
    if (argc < 2)
        return 1;
    fprintf(stderr, argv[1]);
    fputc('\n', stderr);
    return 0;
}
