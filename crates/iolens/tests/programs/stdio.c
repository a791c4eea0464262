#include <stdio.h>
#include <stdlib.h>
int main(void) {
    FILE *f = fopen("out.txt", "w");
    for (int i = 0; i < 100; i++) {
        fprintf(f, "line %d\n", i);
        fputs("fputs\n", f);
        fputc('c', f);
        putc('\n', f);
        fwrite("0123456789", 1, 10, f);
    }
    fclose(f);
    for (int i = 0; i < 50; i++) printf("stdout %d\n", i);
    fflush(stdout);
    char buf[4096];
    f = fopen("out.txt", "r");
    while (fgets(buf, sizeof buf, f)) {}
    rewind(f);
    char *line = NULL;
    size_t n = 0;
    while (getline(&line, &n, f) > 0) {}
    free(line);
    rewind(f);
    while (fgetc(f) != EOF) {}
    rewind(f);
    while (getc(f) != EOF) {}
    rewind(f);
    while (fread(buf, 1, 1000, f) > 0) {}
    fclose(f);
    return 0;
}
