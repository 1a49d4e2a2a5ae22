#include <stdlib.h>

struct buffer {
    char *data;
    size_t cap;
};

int grow(struct buffer *b)
{
    char *tmp = realloc(b->data, b->cap * 2);
    if (tmp == NULL)
        return -1;
    b->data = tmp;
    b->cap *= 2;
    return 0;
}
