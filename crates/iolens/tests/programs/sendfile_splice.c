#define _GNU_SOURCE
#include <fcntl.h>
#include <sys/sendfile.h>
#include <unistd.h>
int main(void) {
    int in = open("src.bin", O_RDONLY), out = open("dst.bin", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    off_t at = 1000;
    if (sendfile(out, in, &at, 100000) != 100000) return 1;   /* from offset 1000 */
    if (sendfile(out, in, NULL, 50000) != 50000) return 1;    /* from the position, 0 */
    int p[2];
    if (pipe(p) != 0) return 1;
    if (splice(in, NULL, p[1], NULL, 30000, 0) != 30000) return 1;
    if (splice(p[0], NULL, out, NULL, 30000, 0) != 30000) return 1;
    return 0;
}
