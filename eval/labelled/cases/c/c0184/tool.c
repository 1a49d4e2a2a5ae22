#include <stdio.h>

int read_word(char word[16])
{
    return scanf("%s", word);
}
