#include <stdio.h>
int main(void) {
    FILE *f = fopen("in.txt", "r");
    long n = 0;
    while (getc_unlocked(f) != EOF) n++;
    fclose(f);
    f = fopen("out.txt", "w");
    for (int i = 0; i < 10000; i++) putc_unlocked('a', f);
    fclose(f);
    return n == 20000 ? 0 : 1;
}
