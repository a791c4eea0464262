/* POSIX aio, as MPI-IO libraries use it for nonblocking calls: 8 aio_write of 64 KiB less 1000
 * bytes per request, then 4 aio_read of 64 KiB, the last one past the end of the file (a short
 * read), then 2 writes of 4 KiB submitted together by lio_listio; each collected by aio_return.
 * glibc carries them out in helper threads. Each of the 12 first is seen done by aio_error, and
 * one byte is written to marker.txt before its aio_return. */
#include <aio.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#define N 8
#define BLOCK 65536
static int marker_fd;

/* Waits until aio_error says the request is done, then writes one byte to marker.txt before the
 * caller collects the result: the request ended before that write began. */
static void finish(struct aiocb *cb, const char *what) {
    const struct aiocb *list[1] = {cb};
    while (aio_error(cb) == EINPROGRESS) aio_suspend(list, 1, NULL);
    if (aio_error(cb) != 0) { perror(what); exit(1); }
    if (write(marker_fd, "m", 1) != 1) { perror("marker"); exit(1); }
}
int main(void) {
    static char buf[N][BLOCK];
    struct aiocb cbs[N];
    int fd = open("aio.dat", O_CREAT | O_RDWR | O_TRUNC, 0644);
    marker_fd = open("marker.txt", O_CREAT | O_WRONLY | O_TRUNC, 0644);
    if (fd < 0 || marker_fd < 0) { perror("open"); return 1; }
    for (int i = 0; i < N; i++) {
        memset(buf[i], 'a' + i, BLOCK);
        memset(&cbs[i], 0, sizeof cbs[i]);
        cbs[i].aio_fildes = fd;
        cbs[i].aio_buf = buf[i];
        cbs[i].aio_nbytes = BLOCK - 1000 * i;
        cbs[i].aio_offset = (off_t)i * BLOCK;
        if (aio_write(&cbs[i]) != 0) { perror("aio_write"); return 1; }
    }
    long written = 0;
    for (int i = 0; i < N; i++) { finish(&cbs[i], "aio_write"); written += aio_return(&cbs[i]); }
    /* Reads: the last one asks past the end of the file and gets less. */
    for (int i = 0; i < 4; i++) {
        cbs[i].aio_nbytes = BLOCK;
        cbs[i].aio_offset = (off_t)(2 * i + 1) * BLOCK;
        if (aio_read(&cbs[i]) != 0) { perror("aio_read"); return 1; }
    }
    long read_bytes = 0;
    for (int i = 0; i < 4; i++) { finish(&cbs[i], "aio_read"); read_bytes += aio_return(&cbs[i]); }
    struct aiocb *list[2] = {&cbs[0], &cbs[1]};
    for (int i = 0; i < 2; i++) {
        cbs[i].aio_nbytes = 4096;
        cbs[i].aio_offset = (off_t)(N + i) * BLOCK;
        cbs[i].aio_lio_opcode = LIO_WRITE;
    }
    if (lio_listio(LIO_WAIT, list, 2, NULL) != 0) { perror("lio_listio"); return 1; }
    for (int i = 0; i < 2; i++) written += aio_return(&cbs[i]);
    printf("aio wrote %ld read %ld\n", written, read_bytes);
    return close(fd);
}
