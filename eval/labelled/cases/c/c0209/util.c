#include <stdlib.h>

struct session {
    unsigned long id;
    int user;
};

void session_init(struct session *s, int user)
{
    s->user = user;
    s->id = ((unsigned long)random() << 31) | (unsigned long)random();
}
