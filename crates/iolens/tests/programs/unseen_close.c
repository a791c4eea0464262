#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
static char block[100];
static int write_temp(const char *tag) {
    char name[64];
    snprintf(name, sizeof name, "temp-%s-XXXXXX", tag);
    int fd = mkstemp(name);
    for (int i = 0; i < 10; i++) write(fd, block, sizeof block);
    return close(fd);
}
int main(void) {
    memset(block, 'x', sizeof block);
    int d = open(".", O_RDONLY | O_DIRECTORY);
    DIR *dir = fdopendir(d);
    while (readdir(dir)) {}
    closedir(dir);
    write_temp("closedir");
    FILE *p = popen("cat > /dev/null", "w");
    fputs("to a pipe\n", p);
    pclose(p);
    write_temp("pclose");
    fdopen(open("data.txt", O_WRONLY | O_CREAT | O_TRUNC, 0644), "w");
    fcloseall();
    write_temp("fcloseall");
    int r = open("data.txt", O_RDONLY);
    syscall(SYS_close, r);
    write_temp("syscall");
    int unnamed = open(".", O_TMPFILE | O_RDWR, 0600);
    for (int i = 0; i < 10; i++) write(unnamed, block, sizeof block);
    return close(unnamed);
}
