#define _GNU_SOURCE
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>
int main(void) {
    int fd = open("synced.txt", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    for (int i = 0; i < 10; i++) write(fd, "0123456789", 10);
    fsync(fd);
    fdatasync(fd);
    sync_file_range(fd, 0, 100, SYNC_FILE_RANGE_WRITE);
    syscall(SYS_sync_file_range, fd, 0, 100, SYNC_FILE_RANGE_WRITE);
    syncfs(fd);
    syscall(SYS_syncfs, fd);
    sync();
    syscall(SYS_sync);
    return close(fd);
}
