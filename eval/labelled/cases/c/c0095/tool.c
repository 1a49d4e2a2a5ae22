#include <string.h>

struct packet {
    unsigned short len;
    unsigned char data[512];
};

int copy_payload(unsigned char dst[256], const struct packet *p)
{
    if (p->len > 256)
        return -1;
    memcpy(dst, p->data, p->len);
    return p->len;
}
