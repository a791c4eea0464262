/* A program that behaves as Go programs do towards the tracer: Go's build-ID note, and system
   calls made by its own instructions, past libc (here a write of a file, then exit_group). */
#include <fcntl.h>
#include <unistd.h>
__asm__(".section .note.go.buildid,\"a\",@note\n"
        ".balign 4\n"
        ".long 4, 8, 4\n"
        ".asciz \"Go\"\n.byte 0\n"
        ".ascii \"id/of/go\"\n"
        ".previous\n");
static long raw3(long n, long a, long b, long c) {
    long ret;
    __asm__ volatile("syscall" : "=a"(ret) : "a"(n), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
    return ret;
}
int main(void) {
    int fd = open("go-like.txt", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    for (int i = 0; i < 100; i++) raw3(1, fd, (long)"0123456789", 10);
    raw3(231, 0, 0, 0);
    return 1;
}
