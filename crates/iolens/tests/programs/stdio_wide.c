#include <stdio.h>
#include <wchar.h>
int main(void) {
    FILE *f = fopen("wide.txt", "w");
    for (int i = 0; i < 100; i++) {
        fputws(L"hello\n", f);
        fwprintf(f, L"%d\n", i);
        fputwc(L'x', f);
    }
    fclose(f);
    wchar_t line[100];
    f = fopen("wide.txt", "r");
    while (fgetws(line, 100, f)) {}
    fclose(f);
    f = fopen("wide.txt", "r");
    while (fgetwc(f) != WEOF) {}
    fclose(f);
    return 0;
}
