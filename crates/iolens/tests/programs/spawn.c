#include <spawn.h>
#include <stdlib.h>
#include <sys/wait.h>
extern char **environ;
int main(int argc, char **argv) {
    setenv("PATH", ".", 1);
    char *args[] = {argv[1], NULL};
    pid_t child;
    int status;
    if (argc < 2 || posix_spawnp(&child, argv[1], NULL, NULL, args, environ) != 0) return 1;
    return waitpid(child, &status, 0) == child && WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
