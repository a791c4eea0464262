#define _GNU_SOURCE
#include <fcntl.h>
#include <unistd.h>
static void put(int fd, int n) { write(fd, "0123456789", n); }
int main(void) {
    int log = open("log.txt", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(log, 1);
    close(log);
    for (int i = 0; i < 10; i++) put(1, 1);             /* log.txt */
    int b = open("b.txt", O_WRONLY | O_CREAT, 0644);
    int c = open("c.txt", O_WRONLY | O_CREAT, 0644);
    put(b, 2);                                          /* b.txt */
    dup2(c, b);
    put(b, 3);                                          /* c.txt, through b's number */
    put(dup(c), 4);                                     /* c.txt */
    put(fcntl(c, F_DUPFD, 100), 5);                     /* c.txt */
    put(fcntl(c, F_DUPFD_CLOEXEC, 200), 6);             /* c.txt */
    put(dup3(c, 300, O_CLOEXEC), 7);                    /* c.txt */
    close_range(3, ~0U, 0);
    put(100, 9);                                        /* closed: EBADF */
    int y = open("y.txt", O_WRONLY | O_CREAT, 0644);
    dup2(y, 900);
    put(900, 8);                                        /* y.txt */
    return 0;
}
