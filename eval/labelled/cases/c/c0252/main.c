#include <stdio.h>

int main(void)
{
    char line[80];

    printf("command> ");
    gets(line);
    printf("you typed: %s\n", line);
    return 0;
}
