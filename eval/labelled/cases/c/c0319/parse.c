#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
    char name[32];

    if (argc < 2)
        return 1;
    strcpy(name, argv[1]);
    printf("hello %s\n", name);
    return 0;
}
