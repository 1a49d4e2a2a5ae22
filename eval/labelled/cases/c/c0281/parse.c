#include <stdio.h>
#include <string.h>

int kernel_release(char *out, size_t len)
{
    FILE *fp = popen("uname -r", "r");

    if (fp == NULL)
        return -1;
    if (fgets(out, (int)len, fp) == NULL) {
        pclose(fp);
        return -1;
    }
    out[strcspn(out, "\n")] = '\0';
    return pclose(fp);
}
