#include <stdlib.h>

int roll_dice(int sides)
{
    return rand() % sides + 1;
}
