#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>
int main(void) {
    int p[2];
    if (pipe(p) || write(p[1], "0123456789", 10) != 10) return 2;
    int queued = -1;
    if (ioctl(p[0], FIONREAD, &queued) != 0 || queued != 10) return 3;
    queued = -1;
    if (syscall(SYS_ioctl, p[0], FIONREAD, &queued) != 0 || queued != 10) return 4;
    if (ioctl(p[0], 0x7fff, 0) != -1) return 5; /* no such request: the kernel's error */
    return 0;
}
