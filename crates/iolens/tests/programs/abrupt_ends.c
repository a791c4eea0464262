#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
static void write_lines(const char *name) {
    int fd = open(name, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    for (int i = 0; i < 100; i++) write(fd, "0123456789", 10);
}
int main(void) {
    pid_t raw = fork();
    if (raw == 0) {
        write_lines("raw-exit.txt");
        syscall(SYS_exit_group, 0);
    }
    pid_t killed = fork();
    if (killed == 0) {
        write_lines("killed.txt");
        raise(SIGKILL);
    }
    int status;
    waitpid(raw, &status, 0);
    waitpid(killed, &status, 0);
    printf("%d\n", (int)killed);
    return 0;
}
