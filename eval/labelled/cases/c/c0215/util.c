#include <string.h>

struct packet {
    unsigned short len;
    unsigned char data[512];
};

void copy_payload(unsigned char dst[256], const struct packet *p)
{
    memcpy(dst, p->data, p->len);
}
