/* A libaio submission whose first block polls a pipe (not a read or write) and whose last one
   fails (bad descriptor): the kernel takes the first two, and the second one is reaped. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
struct iocb {
    uint64_t data;
    uint32_t key, rw_flags;
    uint16_t opcode;
    int16_t prio;
    uint32_t fd;
    uint64_t buf, nbytes;
    int64_t offset;
    uint64_t reserved2;
    uint32_t flags, resfd;
};
struct io_event { uint64_t data, obj, res, res2; };
int main(void) {
    if (!dlopen("libaio.so.1", RTLD_NOW | RTLD_GLOBAL)) return 2;
    /* Through the global scope, as a program linked with -laio calls them: the tracer's first. */
    int (*setup)(int, void **) = dlsym(RTLD_DEFAULT, "io_setup");
    int (*submit)(void *, long, struct iocb **) = dlsym(RTLD_DEFAULT, "io_submit");
    int (*getevents)(void *, long, long, struct io_event *, struct timespec *) = dlsym(RTLD_DEFAULT, "io_getevents");
    void *ctx = 0;
    if (setup(8, &ctx)) return 3;
    int p[2];
    if (pipe(p) || write(p[1], "x", 1) != 1) return 4;
    int fd = open("data", O_RDONLY);
    static char buf[4096];
    struct iocb poll_cb, read_cb, bad_cb;
    memset(&poll_cb, 0, sizeof poll_cb);
    poll_cb.opcode = 5; /* IO_CMD_POLL */
    poll_cb.fd = p[0];
    poll_cb.buf = POLLIN;
    memset(&read_cb, 0, sizeof read_cb);
    read_cb.opcode = 0; /* IO_CMD_PREAD */
    read_cb.fd = fd;
    read_cb.buf = (uintptr_t)buf;
    read_cb.nbytes = sizeof buf;
    bad_cb = read_cb;
    bad_cb.fd = (uint32_t)-1;
    struct iocb *list[] = {&poll_cb, &read_cb, &bad_cb};
    if (submit(ctx, 3, list) != 2) return 5;
    struct io_event events[2];
    int got = 0;
    while (got < 2) {
        int n = getevents(ctx, 1, 2 - got, events + got, 0);
        if (n <= 0) return 6;
        got += n;
    }
    return 0;
}
