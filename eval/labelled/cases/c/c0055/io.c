#include <sys/wait.h>
#include <unistd.h>

int list_dir(const char *dir)
{
    pid_t pid = fork();
    int status = 0;

    if (pid == 0) {
        execlp("ls", "ls", "-l", "--", dir, (char *)NULL);
        _exit(127);
    }
    waitpid(pid, &status, 0);
    return status;
}
