#define _GNU_SOURCE
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>
static int log_fd;
static volatile sig_atomic_t ticks;
static sigjmp_buf timeout;
static int wake[2];
static void tick(int sig) {
    (void)sig;
    write(log_fd, "tick\n", 5);
    write(wake[1], "t", 1); /* the self-pipe pattern: not a file, never counted as one */
    ticks++;
}
static void give_up(int sig) {
    (void)sig;
    siglongjmp(timeout, 1);
}
static ssize_t to_sink(void *sink, const char *buf, size_t n) { return write(*(int *)sink, buf, n); }
static int close_sink(void *sink) { return close(*(int *)sink); }
int main(void) {
    char block[512];
    memset(block, 'd', sizeof block);
    log_fd = open("handler.log", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (pipe(wake) || fcntl(wake[1], F_SETFL, O_NONBLOCK)) return 4;
    write(wake[1], "t", 1); /* known as a pipe before the handler runs */
    int data = open("data.bin", O_RDWR | O_CREAT | O_TRUNC, 0644);
    for (int i = 0; i < 64; i++) write(data, block, sizeof block);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = tick;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGALRM, &sa, 0);
    struct itimerval every = {{0, 1000}, {0, 1000}}, stop = {{0, 0}, {0, 0}};
    setitimer(ITIMER_REAL, &every, 0);
    while (ticks < 200) pread(data, block, sizeof block, 0);
    setitimer(ITIMER_REAL, &stop, 0);
    int handled = ticks;

    sa.sa_handler = give_up;
    sa.sa_flags = 0;
    sigaction(SIGALRM, &sa, 0);
    int p[2];
    if (pipe(p)) return 2;
    struct itimerval once = {{0, 0}, {0, 20000}};
    if (sigsetjmp(timeout, 1) == 0) {
        setitimer(ITIMER_REAL, &once, 0);
        read(p[0], block, 1); /* nothing ever comes: the handler jumps out */
        return 3;
    }
    int after = open("after-jump.txt", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    for (int i = 0; i < 100; i++) write(after, block, 100);
    close(after);

    static int sink;
    sink = open("cookie-sink.txt", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    cookie_io_functions_t io = {.write = to_sink, .close = close_sink};
    FILE *c = fopencookie(&sink, "w", io);
    setvbuf(c, NULL, _IONBF, 0);
    for (int i = 0; i < 50; i++) fwrite(block, 1, 100, c);
    fclose(c);
    printf("%d\n", handled);
    return 0;
}
