#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>
static int ready[2], hold[2];
static void *writer(void *arg) {
    char name[32];
    snprintf(name, sizeof name, "t%ld.bin", (long)arg);
    int fd = open(name, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    for (int i = 0; i < 500; i++) write(fd, "x", 1);
    write(ready[1], "r", 1);
    char c;
    read(hold[0], &c, 1); /* never returns: the exec ends this thread */
    return NULL;
}
int main(void) {
    pipe(ready);
    pipe(hold);
    pthread_t t[4];
    for (long i = 0; i < 4; i++) pthread_create(&t[i], NULL, writer, (void *)i);
    char c;
    for (int i = 0; i < 4; i++) read(ready[0], &c, 1);
    execl("/bin/true", "true", (char *)NULL);
    return 1;
}
