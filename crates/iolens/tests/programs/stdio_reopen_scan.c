#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
int main(void) {
    char block[100];
    memset(block, 'x', sizeof block);
    FILE *f = fopen("first.txt", "w");
    for (int i = 0; i < 10; i++) fwrite(block, 1, sizeof block, f);
    f = freopen("second.txt", "w", f); /* same descriptor number, another file */
    for (int i = 0; i < 50; i++) fwrite(block, 1, sizeof block, f);
    fclose(f);
    f = fopen("numbers.txt", "w");
    for (int i = 0; i < 1000; i++) fprintf(f, "%d\n", i);
    fclose(f);
    f = fopen("numbers.txt", "r");
    int v;
    long sum = 0;
    while (fscanf(f, "%d", &v) == 1) sum += v;
    fclose(f);
    if (!freopen("numbers.txt", "r", stdin)) return 2;
    while (scanf("%d", &v) == 1) sum += v;
    f = fopen("words.bin", "w");
    for (int i = 0; i < 100; i++) putw(i, f);
    fclose(f);
    f = fopen("words.bin", "r");
    while (getw(f) != EOF || !feof(f)) {}
    fclose(f);
    int fd = open("lines.txt", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    for (int i = 0; i < 200; i++) dprintf(fd, "line %d\n", i);
    close(fd);
    return sum == 2 * 499500 ? 0 : 3;
}
