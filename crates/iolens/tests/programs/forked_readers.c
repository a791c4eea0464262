#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>
int main(void) {
    char block[512] = {0};
    int f = open("in.dat", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    for (int i = 0; i < 64; i++) write(f, block, sizeof block);
    close(f);
    int in = open("in.dat", O_RDONLY);
    pid_t child = fork();
    long n = child == 0 ? 120000 : 90000;
    for (long i = 0; i < n; i++) pread(in, block, sizeof block, (i % 64) * 512);
    if (child == 0) return 0;
    waitpid(child, NULL, 0);
    return 0;
}
