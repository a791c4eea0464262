#include <fcntl.h>
#include <unistd.h>
int main(void) {
    char buf[4096];
    int fd = open("data.bin", O_RDONLY);
    for (int i = 0; i < 100000; i++)
        if (pread(fd, buf, sizeof buf, (i % 256) * 4096) != sizeof buf) return 1;
    return close(fd);
}
