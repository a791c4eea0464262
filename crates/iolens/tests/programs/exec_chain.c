#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
extern char **environ;
int main(int argc, char **argv) {
    int left = argc > 1 ? atoi(argv[1]) : 0;
    int fd = open("out.txt", O_WRONLY | O_CREAT | O_APPEND, 0644);
    for (int i = 0; i < 100; i++) write(fd, "0123456789", 10);
    close(fd);
    if (left == 0) return 0;
    char next[16];
    snprintf(next, sizeof next, "%d", left - 1);
    if (left % 3 == 0) execl(argv[0], argv[0], next, (char *)NULL);
    else if (left % 3 == 1) execlp(argv[0], argv[0], next, (char *)NULL);
    else execle(argv[0], argv[0], next, (char *)NULL, environ);
    return 1;
}
