#include <stdio.h>

int read_word(char word[16])
{
    return scanf("%15s", word);
}
