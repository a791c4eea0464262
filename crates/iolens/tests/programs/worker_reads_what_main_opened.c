#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>
static int fd;
static void *worker(void *arg) {
    char buf[512];
    for (long i = 0; i < 20000; i++) pread(fd, buf, sizeof buf, (i % 16) * 512);
    return arg;
}
int main(void) {
    char block[512] = {0};
    int f = open("data.bin", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    for (int i = 0; i < 16; i++) write(f, block, sizeof block);
    close(f);
    fd = open("data.bin", O_RDONLY);
    pthread_t t;
    pthread_create(&t, NULL, worker, NULL);
    pthread_join(t, NULL);
    close(fd);
    return 0;
}
