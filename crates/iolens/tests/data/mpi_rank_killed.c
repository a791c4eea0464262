/* An MPI job in which one rank dies mid-run: every rank writes 8 blocks of 4 KiB to a file of its
 * own in DIR (argv[1]) and meets the others at a barrier; then rank 2 kills itself with SIGKILL,
 * while the others wait for it at a second barrier, which never completes. */
#include <fcntl.h>
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
int main(int argc, char **argv) {
    int rank;
    char path[4096], block[4096];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    snprintf(path, sizeof path, "%s/rank%d.dat", argc > 1 ? argv[1] : ".", rank);
    memset(block, 'x', sizeof block);
    int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0644);
    if (fd < 0) { perror(path); MPI_Abort(MPI_COMM_WORLD, 1); }
    for (int i = 0; i < 8; i++)
        if (write(fd, block, sizeof block) != (ssize_t)sizeof block) { perror("write"); MPI_Abort(MPI_COMM_WORLD, 1); }
    close(fd);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 2) raise(SIGKILL);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}
