#include <stdlib.h>

int open_editor(void)
{
    const char *editor = getenv("EDITOR");

    if (editor == NULL)
        editor = "vi";
    return system(editor);
}
