/* The scanf and wide scanf families, apart from variadic.c: <stdio.h> renames the plain names to their ISO C99
 * forms (asm labels), so a file that includes it cannot define both. Programs built with glibc
 * in any standard mode call the __isoc99_ names; the plain names, with GNU extensions (%a
 * allocates), are what older binaries call. Each goes to its own scanner. */
#include <stdarg.h>

typedef struct _IO_FILE FILE;
extern FILE *stdin;

typedef int wchar_type; /* wchar_t, which <stddef.h> would declare beside more renames */

/* Implemented in Rust (hooks/stdio_by_position.rs). */
extern int iolens_hook_vfscanf(FILE *stream, const char *format, va_list ap, int c99);
extern int iolens_hook_vfwscanf(FILE *stream, const wchar_type *format, va_list ap, int c99);

int vfscanf(FILE *stream, const char *format, va_list ap) {
    return iolens_hook_vfscanf(stream, format, ap, 0);
}

int __isoc99_vfscanf(FILE *stream, const char *format, va_list ap) {
    return iolens_hook_vfscanf(stream, format, ap, 1);
}

int vscanf(const char *format, va_list ap) {
    return iolens_hook_vfscanf(stdin, format, ap, 0);
}

int __isoc99_vscanf(const char *format, va_list ap) {
    return iolens_hook_vfscanf(stdin, format, ap, 1);
}

#define SCAN(stream, c99)                                          \
    va_list ap;                                                    \
    va_start(ap, format);                                          \
    int ret = iolens_hook_vfscanf((stream), format, ap, (c99));    \
    va_end(ap);                                                    \
    return ret;

int fscanf(FILE *stream, const char *format, ...) { SCAN(stream, 0) }
int __isoc99_fscanf(FILE *stream, const char *format, ...) { SCAN(stream, 1) }
int scanf(const char *format, ...) { SCAN(stdin, 0) }
int __isoc99_scanf(const char *format, ...) { SCAN(stdin, 1) }


int vfwscanf(FILE *stream, const wchar_type *format, va_list ap) {
    return iolens_hook_vfwscanf(stream, format, ap, 0);
}

int __isoc99_vfwscanf(FILE *stream, const wchar_type *format, va_list ap) {
    return iolens_hook_vfwscanf(stream, format, ap, 1);
}

int vwscanf(const wchar_type *format, va_list ap) {
    return iolens_hook_vfwscanf(stdin, format, ap, 0);
}

int __isoc99_vwscanf(const wchar_type *format, va_list ap) {
    return iolens_hook_vfwscanf(stdin, format, ap, 1);
}

#define WSCAN(stream, c99)                                         \
    va_list ap;                                                    \
    va_start(ap, format);                                          \
    int ret = iolens_hook_vfwscanf((stream), format, ap, (c99));   \
    va_end(ap);                                                    \
    return ret;

int fwscanf(FILE *stream, const wchar_type *format, ...) { WSCAN(stream, 0) }
int __isoc99_fwscanf(FILE *stream, const wchar_type *format, ...) { WSCAN(stream, 1) }
int wscanf(const wchar_type *format, ...) { WSCAN(stdin, 0) }
int __isoc99_wscanf(const wchar_type *format, ...) { WSCAN(stdin, 1) }
