#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>
static int in;
static void *reader(void *arg) {
    long t = (long)arg;
    char buf[512], name[32];
    snprintf(name, sizeof name, "out%ld.dat", t);
    int out = open(name, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    for (long i = 0; i < 150000; i++) {
        pread(in, buf, sizeof buf, ((i * 7 + t) % 64) * 512);
        if (i % 1000 == 0) write(out, buf, 100);
    }
    fsync(out);
    close(out);
    return NULL;
}
int main(void) {
    char block[512] = {0};
    int f = open("in.dat", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    for (int i = 0; i < 64; i++) write(f, block, sizeof block);
    close(f);
    in = open("in.dat", O_RDONLY);
    pthread_t t[4];
    for (long i = 0; i < 4; i++) pthread_create(&t[i], NULL, reader, (void *)i);
    for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
    return 0;
}
