/* POSIX aio requests never collected: 3 aio_write of 4 KiB to uncollected.dat, each waited for
 * with aio_error until done but never passed to aio_return, then 1 aio_write of 1000 bytes that
 * is collected; the program then exits. */
#include <aio.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#define N 3
#define BLOCK 4096
int main(void) {
    static char buf[N + 1][BLOCK];
    static struct aiocb cbs[N + 1];
    int fd = open("uncollected.dat", O_CREAT | O_WRONLY | O_TRUNC, 0644);
    if (fd < 0) { perror("open"); return 1; }
    for (int i = 0; i <= N; i++) {
        memset(buf[i], 'a' + i, BLOCK);
        cbs[i].aio_fildes = fd;
        cbs[i].aio_buf = buf[i];
        cbs[i].aio_nbytes = i < N ? BLOCK : 1000;
        cbs[i].aio_offset = (off_t)i * BLOCK;
        if (aio_write(&cbs[i]) != 0) { perror("aio_write"); return 1; }
    }
    for (int i = 0; i <= N; i++) {
        const struct aiocb *list[1] = {&cbs[i]};
        while (aio_error(&cbs[i]) == EINPROGRESS) aio_suspend(list, 1, NULL);
        if (aio_error(&cbs[i]) != 0) { perror("aio_write"); return 1; }
    }
    if (aio_return(&cbs[N]) != 1000) { perror("aio_return"); return 1; }
    printf("left %d requests uncollected\n", N);
    return 0;
}
