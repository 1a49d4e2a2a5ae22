#include <stdlib.h>

void clear_screen(void)
{
    system("clear");
}
