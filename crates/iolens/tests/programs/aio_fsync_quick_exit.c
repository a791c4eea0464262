#include <aio.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
static int log_fd;
static void last_words(void) { write(log_fd, "bye\n", 4); }
static void sync_by_aio(int fd, int mode) {
    struct aiocb cb;
    memset(&cb, 0, sizeof cb);
    cb.aio_fildes = fd;
    if (aio_fsync(mode, &cb)) exit(2);
    while (aio_error(&cb) == EINPROGRESS) {}
    aio_return(&cb);
}
int main(void) {
    int fd = open("aio-synced.txt", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    write(fd, "0123456789", 10);
    sync_by_aio(fd, O_SYNC);
    sync_by_aio(fd, O_DSYNC);
    log_fd = open("quick.txt", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    at_quick_exit(last_words);
    for (int i = 0; i < 100; i++) write(log_fd, "0123456789", 10);
    quick_exit(0);
}
