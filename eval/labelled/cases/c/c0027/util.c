#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    pid_t pid;

    if (argc < 2)
        return 2;
    pid = fork();
    if (pid == 0) {
        execl("/bin/sh", "sh", "-c", argv[1], (char *)NULL);
        _exit(127);
    }
    waitpid(pid, NULL, 0);
    return 0;
}
