#include <fcntl.h>
#include <linux/io_uring.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
int main(void) {
    struct io_uring_params params;
    memset(&params, 0, sizeof params);
    int ring = syscall(__NR_io_uring_setup, 8, &params);
    if (ring < 0) return 3; /* io_uring disabled: nothing to note */
    int fds[2] = {open("ring-data.bin", O_RDWR | O_CREAT, 0644), -1};
    if (syscall(__NR_io_uring_register, ring, IORING_REGISTER_FILES, fds, 2) != 0) return 1;
    write(fds[0], "plain", 5);
    /* Closed before the end: the ring is noted when it is made, not found at exit. */
    close(ring);
    return 0;
}
