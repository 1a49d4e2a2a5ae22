#include <stdlib.h>

struct node {
    int value;
    struct node *next;
};

struct node *push(struct node *head, int value)
{
    struct node *n;

    if ((n = malloc(sizeof *n)) == NULL)
        return head;
    n->value = value;
    n->next = head;
    return n;
}
