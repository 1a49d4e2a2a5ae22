#include <stdlib.h>
#include <time.h>

static const char charset[] = "abcdefghijklmnopqrstuvwxyz0123456789";

void make_token(char *token, size_t len)
{
    size_t i;

    srand((unsigned)time(NULL));
    for (i = 0; i + 1 < len; i++)
        token[i] = charset[rand() % (sizeof(charset) - 1)];
    token[len - 1] = '\0';
}
