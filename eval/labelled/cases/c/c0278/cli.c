#include <stdio.h>
#include <stdlib.h>

void greet(void)
{
    const char *who = getenv("USER_GREETING");

    if (who != NULL) {
        char line[128];
        snprintf(line, sizeof line, "%s\n", who);
        printf(line);
    }
}
