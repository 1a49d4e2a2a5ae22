#include <stdio.h>

#define USAGE "usage: %s [-v] FILE\n"

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, USAGE, argv[0]);
        return 2;
    }
    puts(argv[1]);
    return 0;
}
