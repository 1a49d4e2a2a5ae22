#include <stdlib.h>

struct buffer {
    char *data;
    size_t cap;
};

void grow(struct buffer *b)
{
    b->cap *= 2;
    b->data = realloc(b->data, b->cap);
}
