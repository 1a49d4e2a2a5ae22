#include <stdio.h>
#include <string.h>

int main(void)
{
    char line[80];

    printf("command> ");
    if (fgets(line, sizeof line, stdin) == NULL)
        return 1;
    line[strcspn(line, "\n")] = '\0';
    printf("you typed: %s\n", line);
    return 0;
}
