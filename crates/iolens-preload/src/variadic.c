/* Variadic hooks: the printf family and the execl family. They forward to non-variadic functions and
 * report to the Rust recorder, which owns all state. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <stdint.h>
#include <unistd.h>
#include <wchar.h>

/* Implemented in Rust (hooks/stdio.rs, hooks/stdio_by_position.rs, hooks/process.rs). */
extern int iolens_hook_vfprintf(FILE *stream, const char *format, va_list ap);
extern FILE *iolens_stdout(void);
extern int iolens_hook_vdprintf(int fd, const char *format, va_list ap);
extern int iolens_hook_vfwprintf(FILE *stream, const wchar_t *format, va_list ap);
extern int execv(const char *path, char *const argv[]);
extern int execvp(const char *file, char *const argv[]);
extern int execve(const char *path, char *const argv[], char *const envp[]);

/* The _chk forms (_FORTIFY_SOURCE) differ by a flag asking for extra checks of the format;
 * they are formatted by the plain function. */

int vfprintf(FILE *stream, const char *format, va_list ap) {
    return iolens_hook_vfprintf(stream, format, ap);
}

int __vfprintf_chk(FILE *stream, int flag, const char *format, va_list ap) {
    (void)flag;
    return iolens_hook_vfprintf(stream, format, ap);
}

int vprintf(const char *format, va_list ap) {
    return iolens_hook_vfprintf(iolens_stdout(), format, ap);
}

int __vprintf_chk(int flag, const char *format, va_list ap) {
    (void)flag;
    return iolens_hook_vfprintf(iolens_stdout(), format, ap);
}

int fprintf(FILE *stream, const char *format, ...) {
    va_list ap;
    va_start(ap, format);
    int ret = iolens_hook_vfprintf(stream, format, ap);
    va_end(ap);
    return ret;
}

int __fprintf_chk(FILE *stream, int flag, const char *format, ...) {
    (void)flag;
    va_list ap;
    va_start(ap, format);
    int ret = iolens_hook_vfprintf(stream, format, ap);
    va_end(ap);
    return ret;
}

int printf(const char *format, ...) {
    va_list ap;
    va_start(ap, format);
    int ret = iolens_hook_vfprintf(iolens_stdout(), format, ap);
    va_end(ap);
    return ret;
}

int __printf_chk(int flag, const char *format, ...) {
    (void)flag;
    va_list ap;
    va_start(ap, format);
    int ret = iolens_hook_vfprintf(iolens_stdout(), format, ap);
    va_end(ap);
    return ret;
}

/* The wide printf family. */

int vfwprintf(FILE *stream, const wchar_t *format, va_list ap) {
    return iolens_hook_vfwprintf(stream, format, ap);
}

int __vfwprintf_chk(FILE *stream, int flag, const wchar_t *format, va_list ap) {
    (void)flag;
    return iolens_hook_vfwprintf(stream, format, ap);
}

int vwprintf(const wchar_t *format, va_list ap) {
    return iolens_hook_vfwprintf(iolens_stdout(), format, ap);
}

int __vwprintf_chk(int flag, const wchar_t *format, va_list ap) {
    (void)flag;
    return iolens_hook_vfwprintf(iolens_stdout(), format, ap);
}

#define WPRINT(stream)                                          \
    va_list ap;                                                 \
    va_start(ap, format);                                       \
    int ret = iolens_hook_vfwprintf((stream), format, ap);      \
    va_end(ap);                                                 \
    return ret;

int fwprintf(FILE *stream, const wchar_t *format, ...) { WPRINT(stream) }
int __fwprintf_chk(FILE *stream, int flag, const wchar_t *format, ...) { (void)flag; WPRINT(stream) }
int wprintf(const wchar_t *format, ...) { WPRINT(iolens_stdout()) }
int __wprintf_chk(int flag, const wchar_t *format, ...) { (void)flag; WPRINT(iolens_stdout()) }

/* The dprintf family: formatted output straight to a descriptor. */

int vdprintf(int fd, const char *format, va_list ap) {
    return iolens_hook_vdprintf(fd, format, ap);
}

int __vdprintf_chk(int fd, int flag, const char *format, va_list ap) {
    (void)flag;
    return iolens_hook_vdprintf(fd, format, ap);
}

int dprintf(int fd, const char *format, ...) {
    va_list ap;
    va_start(ap, format);
    int ret = iolens_hook_vdprintf(fd, format, ap);
    va_end(ap);
    return ret;
}

int __dprintf_chk(int fd, int flag, const char *format, ...) {
    (void)flag;
    va_list ap;
    va_start(ap, format);
    int ret = iolens_hook_vdprintf(fd, format, ap);
    va_end(ap);
    return ret;
}

/* Collects the NULL-terminated argument list on the stack (no allocation). */
#define COLLECT_ARGS(first)                                   \
    va_list ap;                                               \
    size_t argc = 1;                                          \
    va_start(ap, first);                                      \
    while (va_arg(ap, const char *) != NULL) argc++;          \
    va_end(ap);                                               \
    char *argv[argc + 1];                                     \
    argv[0] = (char *)first;                                  \
    va_start(ap, first);                                      \
    for (size_t i = 1; i <= argc; i++) argv[i] = va_arg(ap, char *);

int execl(const char *path, const char *arg, ...) {
    COLLECT_ARGS(arg)
    va_end(ap);
    return execv(path, argv);
}

int execlp(const char *file, const char *arg, ...) {
    COLLECT_ARGS(arg)
    va_end(ap);
    return execvp(file, argv);
}

int execle(const char *path, const char *arg, ...) {
    COLLECT_ARGS(arg)
    char *const *envp = va_arg(ap, char *const *);
    va_end(ap);
    return execve(path, argv, envp);
}
