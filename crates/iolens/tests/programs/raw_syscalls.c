#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/fs.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
int main(void) {
    char block[100];
    memset(block, 'x', sizeof block);
    int fd = syscall(SYS_openat, AT_FDCWD, "raw.txt", O_RDWR | O_CREAT | O_TRUNC, 0644);
    for (int i = 0; i < 10; i++) syscall(SYS_write, fd, block, sizeof block);
    for (int i = 0; i < 10; i++) syscall(SYS_pwrite64, fd, block, sizeof block, 1000 + 100 * i);
    for (int i = 0; i < 10; i++) syscall(SYS_pread64, fd, block, sizeof block, 100 * i);
    syscall(SYS_lseek, fd, 0, SEEK_SET);
    while (syscall(SYS_read, fd, block, 64) > 0) {}
    syscall(SYS_fsync, fd);
    int copy = syscall(SYS_openat, AT_FDCWD, "clone.txt", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    syscall(SYS_ioctl, copy, FICLONE, fd); /* fails where the file system cannot clone */
    syscall(SYS_close, copy);
    syscall(SYS_close, fd);
    fd = syscall(SYS_open, "raw.txt", O_RDONLY);
    syscall(SYS_read, fd, block, sizeof block);
    return syscall(SYS_close, fd);
}
