#include <string.h>

#define DIR_MAX 128

void build_path(char *path, const char *dir, const char *filename)
{
    char full[DIR_MAX];

    strcpy(full, dir);
    strcat(full, "/");
    strcat(full, filename);
    strcpy(path, full);
}
