/* MPI-IO workload whose calls and bytes are known exactly (per rank):
 * writes: 4 x write_at_all 64 KiB, 2 x write_at 16 KiB, 3 x iwrite_at 8 KiB (Waitall),
 *         1 x iwrite 8 KiB (Wait), 1 x split collective write_at_all_begin/end 2 KiB,
 *         1 x iwrite_at 8 KiB completed by PMPI_Wait, past the tools (its handle reused after);
 *         one sync;
 * reads:  1 x iread_at 1 KiB (completed by MPI_Test), 1 x read_at of 16 KiB through a strided
 *         view (data sieving), 1 x read_at_all 4 KiB, the last nonblocking call of the program
 *         under MPI 3: 1 x iread_at 1 KiB completed by PMPI_Wait (counted at MPI_Finalize).
 * With MPI 4 (MPICH 4; Open MPI 4.1 is MPI 3.1), every large-count (_c) read and write once more,
 * 1 KiB each, on large_count.dat; rank 0 prints how many calls that is per rank. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BLOCK (64 * 1024)

static void check(int rc, const char *what) {
    if (rc != MPI_SUCCESS) { fprintf(stderr, "%s failed: %d\n", what, rc); MPI_Abort(MPI_COMM_WORLD, 1); }
}

#if MPI_VERSION >= 4
/* Waits for a nonblocking call: through ROMIO's MPIO_Wait where mpio.h names it. */
static void wait_for(MPI_Request *r) {
#ifdef MPIO_Wait
    check(MPIO_Wait(r, MPI_STATUS_IGNORE), "MPIO_Wait");
#else
    check(MPI_Wait(r, MPI_STATUS_IGNORE), "wait");
#endif
}

/* Polls a nonblocking call to its end: through ROMIO's MPIO_Test where mpio.h names it. */
static void poll_until_done(MPI_Request *r) {
    int done = 0;
    while (!done)
#ifdef MPIO_Test
        check(MPIO_Test(r, &done, MPI_STATUS_IGNORE), "MPIO_Test");
#else
        check(MPI_Test(r, &done, MPI_STATUS_IGNORE), "test");
#endif
}

/* The 28 large-count reads and writes, each of 256 MPI_INTs (1 KiB): 14 writes then 14 reads,
 * in each rank's own 10 KiB region, then through the shared file pointer after all regions. */
static int large_count(const char *dir, int rank, int size, char *buf) {
    char path[4096];
    snprintf(path, sizeof path, "%s/large_count.dat", dir);
    MPI_File fh;
    MPI_Request r;
    const MPI_Count n = 256;
    const MPI_Offset kib = 1024, region = (MPI_Offset)rank * 10 * kib, shared = (MPI_Offset)size * 10 * kib;
    check(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh), "open large_count");
    check(MPI_File_write_at_c(fh, region, buf, n, MPI_INT, MPI_STATUS_IGNORE), "write_at_c");
    check(MPI_File_write_at_all_c(fh, region + kib, buf, n, MPI_INT, MPI_STATUS_IGNORE), "write_at_all_c");
    check(MPI_File_iwrite_at_c(fh, region + 2 * kib, buf, n, MPI_INT, &r), "iwrite_at_c");
    wait_for(&r);
    check(MPI_File_iwrite_at_all_c(fh, region + 3 * kib, buf, n, MPI_INT, &r), "iwrite_at_all_c");
    check(MPI_Wait(&r, MPI_STATUS_IGNORE), "wait");
    check(MPI_File_write_at_all_begin_c(fh, region + 4 * kib, buf, n, MPI_INT), "write_at_all_begin_c");
    check(MPI_File_write_at_all_end(fh, buf, MPI_STATUS_IGNORE), "write_at_all_end");
    check(MPI_File_seek(fh, region + 5 * kib, MPI_SEEK_SET), "seek");
    check(MPI_File_write_c(fh, buf, n, MPI_INT, MPI_STATUS_IGNORE), "write_c");
    check(MPI_File_write_all_c(fh, buf, n, MPI_INT, MPI_STATUS_IGNORE), "write_all_c");
    check(MPI_File_iwrite_c(fh, buf, n, MPI_INT, &r), "iwrite_c");
    poll_until_done(&r);
    check(MPI_File_iwrite_all_c(fh, buf, n, MPI_INT, &r), "iwrite_all_c");
    check(MPI_Wait(&r, MPI_STATUS_IGNORE), "wait");
    check(MPI_File_write_all_begin_c(fh, buf, n, MPI_INT), "write_all_begin_c");
    check(MPI_File_write_all_end(fh, buf, MPI_STATUS_IGNORE), "write_all_end");
    check(MPI_File_seek_shared(fh, shared, MPI_SEEK_SET), "seek_shared");
    check(MPI_File_write_shared_c(fh, buf, n, MPI_INT, MPI_STATUS_IGNORE), "write_shared_c");
    check(MPI_File_write_ordered_c(fh, buf, n, MPI_INT, MPI_STATUS_IGNORE), "write_ordered_c");
    check(MPI_File_iwrite_shared_c(fh, buf, n, MPI_INT, &r), "iwrite_shared_c");
    check(MPI_Wait(&r, MPI_STATUS_IGNORE), "wait");
    check(MPI_File_write_ordered_begin_c(fh, buf, n, MPI_INT), "write_ordered_begin_c");
    check(MPI_File_write_ordered_end(fh, buf, MPI_STATUS_IGNORE), "write_ordered_end");
    check(MPI_File_sync(fh), "sync");
    MPI_Barrier(MPI_COMM_WORLD);

    check(MPI_File_read_at_c(fh, region, buf, n, MPI_INT, MPI_STATUS_IGNORE), "read_at_c");
    check(MPI_File_read_at_all_c(fh, region + kib, buf, n, MPI_INT, MPI_STATUS_IGNORE), "read_at_all_c");
    check(MPI_File_iread_at_c(fh, region + 2 * kib, buf, n, MPI_INT, &r), "iread_at_c");
    wait_for(&r);
    check(MPI_File_iread_at_all_c(fh, region + 3 * kib, buf, n, MPI_INT, &r), "iread_at_all_c");
    check(MPI_Wait(&r, MPI_STATUS_IGNORE), "wait");
    check(MPI_File_read_at_all_begin_c(fh, region + 4 * kib, buf, n, MPI_INT), "read_at_all_begin_c");
    check(MPI_File_read_at_all_end(fh, buf, MPI_STATUS_IGNORE), "read_at_all_end");
    check(MPI_File_seek(fh, region + 5 * kib, MPI_SEEK_SET), "seek");
    check(MPI_File_read_c(fh, buf, n, MPI_INT, MPI_STATUS_IGNORE), "read_c");
    check(MPI_File_read_all_c(fh, buf, n, MPI_INT, MPI_STATUS_IGNORE), "read_all_c");
    check(MPI_File_iread_c(fh, buf, n, MPI_INT, &r), "iread_c");
    poll_until_done(&r);
    check(MPI_File_iread_all_c(fh, buf, n, MPI_INT, &r), "iread_all_c");
    check(MPI_Wait(&r, MPI_STATUS_IGNORE), "wait");
    check(MPI_File_read_all_begin_c(fh, buf, n, MPI_INT), "read_all_begin_c");
    check(MPI_File_read_all_end(fh, buf, MPI_STATUS_IGNORE), "read_all_end");
    check(MPI_File_seek_shared(fh, shared, MPI_SEEK_SET), "seek_shared");
    check(MPI_File_read_shared_c(fh, buf, n, MPI_INT, MPI_STATUS_IGNORE), "read_shared_c");
    check(MPI_File_read_ordered_c(fh, buf, n, MPI_INT, MPI_STATUS_IGNORE), "read_ordered_c");
    check(MPI_File_iread_shared_c(fh, buf, n, MPI_INT, &r), "iread_shared_c");
    check(MPI_Wait(&r, MPI_STATUS_IGNORE), "wait");
    check(MPI_File_read_ordered_begin_c(fh, buf, n, MPI_INT), "read_ordered_begin_c");
    check(MPI_File_read_ordered_end(fh, buf, MPI_STATUS_IGNORE), "read_ordered_end");
    check(MPI_File_close(&fh), "close large_count");
    return 28;
}
#endif

int main(int argc, char **argv) {
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc < 2) { fprintf(stderr, "usage: app DIR\n"); MPI_Abort(MPI_COMM_WORLD, 2); }
    char path[4096];
    snprintf(path, sizeof path, "%s/shared.dat", argv[1]);
    char *buf = malloc(BLOCK);
    memset(buf, 'a' + rank, BLOCK);
    MPI_File fh;
    check(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh), "open");
    for (int round = 0; round < 4; round++) {
        MPI_Offset at = ((MPI_Offset)round * size + rank) * BLOCK;
        check(MPI_File_write_at_all(fh, at, buf, BLOCK, MPI_BYTE, MPI_STATUS_IGNORE), "write_at_all");
    }
    MPI_Offset tail = (MPI_Offset)4 * size * BLOCK + (MPI_Offset)rank * BLOCK;
    for (int i = 0; i < 2; i++)
        check(MPI_File_write_at(fh, tail + i * 16384, buf, 4096, MPI_INT, MPI_STATUS_IGNORE), "write_at");
    MPI_Request reqs[3];
    for (int i = 0; i < 3; i++)
        check(MPI_File_iwrite_at(fh, tail + 32768 + i * 8192, buf, 8192, MPI_BYTE, &reqs[i]), "iwrite_at");
    check(MPI_Waitall(3, reqs, MPI_STATUSES_IGNORE), "waitall");
    MPI_Request one;
    check(MPI_File_seek(fh, tail + 57344, MPI_SEEK_SET), "seek");
    check(MPI_File_iwrite(fh, buf, 1024, MPI_DOUBLE, &one), "iwrite");
    check(MPI_Wait(&one, MPI_STATUS_IGNORE), "wait");
    MPI_Offset beyond = (MPI_Offset)5 * size * BLOCK + (MPI_Offset)rank * BLOCK;
    check(MPI_File_write_at_all_begin(fh, beyond, buf, 2048, MPI_BYTE), "write_at_all_begin");
    check(MPI_File_write_at_all_end(fh, buf, MPI_STATUS_IGNORE), "write_at_all_end");
    MPI_Request unseen;
    check(MPI_File_iwrite_at(fh, beyond + 4096, buf, 8192, MPI_BYTE, &unseen), "iwrite_at");
    check(PMPI_Wait(&unseen, MPI_STATUS_IGNORE), "PMPI_Wait");
    char small[1024];
    MPI_Request polled;
    check(MPI_File_iread_at(fh, tail, small, 1024, MPI_BYTE, &polled), "iread_at");
    int done = 0;
    while (!done)
        check(MPI_Test(&polled, &done, MPI_STATUS_IGNORE), "test");
    if (small[0] != 'a' + rank) { fprintf(stderr, "iread_at read wrong data\n"); MPI_Abort(MPI_COMM_WORLD, 5); }
    check(MPI_File_sync(fh), "sync");
    check(MPI_File_close(&fh), "close");
    MPI_Barrier(MPI_COMM_WORLD);

    /* Data sieving: 16 blocks of 1 KiB every 4 KiB, read in one independent call. */
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "romio_ds_read", "enable");
    check(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDONLY, info, &fh), "open for reading");
    MPI_Datatype strided;
    MPI_Type_vector(16, 1024, 4096, MPI_BYTE, &strided);
    MPI_Type_commit(&strided);
    check(MPI_File_set_view(fh, (MPI_Offset)rank * BLOCK, MPI_BYTE, strided, "native", info), "set_view");
    MPI_Status status;
    check(MPI_File_read_at(fh, 0, buf, 16384, MPI_BYTE, &status), "read_at");
    int got = 0;
    MPI_Get_count(&status, MPI_BYTE, &got);
    if (got != 16384) { fprintf(stderr, "read %d bytes\n", got); MPI_Abort(MPI_COMM_WORLD, 3); }
    if (buf[0] != 'a' + rank) { fprintf(stderr, "read wrong data\n"); MPI_Abort(MPI_COMM_WORLD, 4); }
    check(MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL), "set_view");
    check(MPI_File_read_at_all(fh, (MPI_Offset)rank * 4096, buf, 4096, MPI_BYTE, MPI_STATUS_IGNORE), "read_at_all");
    MPI_Request last;
    check(MPI_File_iread_at(fh, (MPI_Offset)rank * 4096, buf, 1024, MPI_BYTE, &last), "iread_at");
    check(PMPI_Wait(&last, MPI_STATUS_IGNORE), "PMPI_Wait");
    check(MPI_File_close(&fh), "close");
    MPI_Type_free(&strided);
    MPI_Info_free(&info);
    int large_count_calls = 0;
#if MPI_VERSION >= 4
    large_count_calls = large_count(argv[1], rank, size, buf);
#endif
    if (rank == 0) printf("large-count calls per rank: %d\n", large_count_calls);
    free(buf);
    MPI_Finalize();
    return 0;
}
