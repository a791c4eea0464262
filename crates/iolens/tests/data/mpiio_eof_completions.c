/* Nonblocking and split collective MPI-IO reads past the end of the file, completed every way
 * MPI allows: each rank writes 400 bytes to its own file, eofc_<rank>.dat, then asks for 4096
 * bytes at a time (MPI_File_iread_at) at offsets inside it, completing them by
 *   MPI_Wait with a status (1 read: the probe, below),
 *   MPI_Waitall with statuses (2 reads, and a nonblocking write among them),
 *   MPI_Waitall with MPI_STATUSES_IGNORE (2 reads),
 *   MPI_Testall in a loop with MPI_STATUSES_IGNORE (1 read, after a barrier's request),
 *   MPI_Waitany with a status (2 reads) and with MPI_STATUS_IGNORE (2 reads),
 *   MPI_Testany in a loop with a status (2 reads),
 *   MPI_Waitsome and MPI_Testsome in loops with statuses (3 reads each),
 *   MPI_Waitall with MPI_STATUSES_IGNORE over more requests than the hook keeps statuses for
 *   on its stack (70 reads),
 * then the split collectives MPI_File_read_at_all_begin/_end (a status),
 * MPI_File_read_all_begin/_end (MPI_STATUS_IGNORE) and MPI_File_read_ordered_begin/_end (a
 * status, at the shared file pointer): 91 reads of 4096 bytes in all. It prints,
 * as `rank R read B bytes`, what MPI_Get_count said each read moved where it had a status, plus
 * what the status would have said where it ignored it: what the file held past the offset
 * (400 - offset), except that Open MPI's ROMIO says a nonblocking read moved all it asked for,
 * which the probe tells (the split collectives are told right by both libraries).
 *
 * MPI_Testall's loop has one read beside an MPI_Ibarrier: MPICH 4.0's MPI_Testall over two of
 * ROMIO's requests, one done and one not, fails an assertion on a request's reference count. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define SIZE 400
#define ASK 4096

#define MANY 70

static char buf[MANY][ASK];
static long total;
/* Whether the library's status of a nonblocking read tells what it moved (MPICH) or what it
 * asked (Open MPI's ROMIO). */
static int short_statuses;

static void check(int err, const char *what) {
    if (err != MPI_SUCCESS) {
        fprintf(stderr, "%s failed: %d\n", what, err);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
}

/* What MPI_Get_count says a completed read moved. */
static void count(MPI_Status *status) {
    int got = 0;
    check(MPI_Get_count(status, MPI_BYTE, &got), "get_count");
    total += got;
}

/* What the status of a nonblocking read at `offset` would have said. */
static long told(MPI_Offset offset) {
    return short_statuses ? SIZE - offset : ASK;
}

/* Posts reads at `offsets[0..n]`. */
static void post(MPI_File fh, const MPI_Offset *offsets, int n, MPI_Request *requests) {
    for (int i = 0; i < n; i++) {
        check(MPI_File_iread_at(fh, offsets[i], buf[i], ASK, MPI_BYTE, &requests[i]), "iread_at");
    }
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    char name[4096];
    snprintf(name, sizeof name, "%s/eofc_%d.dat", argc > 1 ? argv[1] : ".", rank);
    MPI_File fh;
    check(MPI_File_open(MPI_COMM_SELF, name, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh), "open");
    static char data[SIZE];
    check(MPI_File_write_at(fh, 0, data, SIZE, MPI_BYTE, MPI_STATUS_IGNORE), "write_at");
    check(MPI_File_sync(fh), "sync");

    MPI_Request requests[4];
    MPI_Status statuses[4];
    MPI_Status status;
    int index, flag, outcount, indices[4];

    /* The probe: a nonblocking read at 300, completed by MPI_Wait. */
    check(MPI_File_iread_at(fh, 300, buf[0], ASK, MPI_BYTE, &requests[0]), "iread_at");
    check(MPI_Wait(&requests[0], &status), "wait");
    int got = 0;
    check(MPI_Get_count(&status, MPI_BYTE, &got), "get_count");
    short_statuses = got == SIZE - 300;
    total += got;

    /* MPI_Waitall with statuses: reads at 200 and 300, a write of 100 bytes at 0. */
    const MPI_Offset all[2] = {200, 300};
    post(fh, all, 2, requests);
    check(MPI_File_iwrite_at(fh, 0, data, 100, MPI_BYTE, &requests[2]), "iwrite_at");
    check(MPI_Waitall(3, requests, statuses), "waitall");
    count(&statuses[0]);
    count(&statuses[1]);

    /* MPI_Waitall, statuses ignored. */
    const MPI_Offset all_ignored[2] = {100, 250};
    post(fh, all_ignored, 2, requests);
    check(MPI_Waitall(2, requests, MPI_STATUSES_IGNORE), "waitall");
    total += told(100) + told(250);

    /* MPI_Testall until done, statuses ignored: a barrier's request, then a read. */
    check(MPI_Ibarrier(MPI_COMM_SELF, &requests[0]), "ibarrier");
    check(MPI_File_iread_at(fh, 50, buf[1], ASK, MPI_BYTE, &requests[1]), "iread_at");
    do {
        check(MPI_Testall(2, requests, &flag, MPI_STATUSES_IGNORE), "testall");
    } while (!flag);
    total += told(50);

    /* MPI_Waitany with a status. */
    const MPI_Offset any[2] = {0, 300};
    post(fh, any, 2, requests);
    for (int k = 0; k < 2; k++) {
        check(MPI_Waitany(2, requests, &index, &status), "waitany");
        count(&status);
    }

    /* MPI_Waitany, status ignored: what the file held past the completed one's offset. */
    const MPI_Offset any_ignored[2] = {100, 200};
    post(fh, any_ignored, 2, requests);
    for (int k = 0; k < 2; k++) {
        check(MPI_Waitany(2, requests, &index, MPI_STATUS_IGNORE), "waitany");
        total += told(any_ignored[index]);
    }

    /* MPI_Testany until both are done, with a status. */
    const MPI_Offset testany[2] = {150, 390};
    post(fh, testany, 2, requests);
    for (int done = 0; done < 2;) {
        check(MPI_Testany(2, requests, &index, &flag, &status), "testany");
        if (flag && index != MPI_UNDEFINED) {
            count(&status);
            done++;
        }
    }

    /* MPI_Waitsome until all are done, with statuses. */
    const MPI_Offset some[3] = {0, 100, 200};
    post(fh, some, 3, requests);
    for (int done = 0; done < 3;) {
        check(MPI_Waitsome(3, requests, &outcount, indices, statuses), "waitsome");
        for (int j = 0; j < outcount; j++) {
            count(&statuses[j]);
        }
        done += outcount;
    }

    /* MPI_Testsome until all are done, with statuses. */
    const MPI_Offset testsome[3] = {50, 150, 250};
    post(fh, testsome, 3, requests);
    for (int done = 0; done < 3;) {
        check(MPI_Testsome(3, requests, &outcount, indices, statuses), "testsome");
        for (int j = 0; j < outcount; j++) {
            count(&statuses[j]);
        }
        done += outcount;
    }

    /* MPI_Waitall over many reads, statuses ignored. */
    MPI_Offset many[MANY];
    MPI_Request many_requests[MANY];
    for (int i = 0; i < MANY; i++) {
        many[i] = i * 5;
    }
    post(fh, many, MANY, many_requests);
    check(MPI_Waitall(MANY, many_requests, MPI_STATUSES_IGNORE), "waitall");
    for (int i = 0; i < MANY; i++) {
        total += told(many[i]);
    }

    /* Split collectives: at an offset with a status, at the file pointer ignoring it. */
    check(MPI_File_read_at_all_begin(fh, 120, buf[0], ASK, MPI_BYTE), "read_at_all_begin");
    check(MPI_File_read_at_all_end(fh, buf[0], &status), "read_at_all_end");
    count(&status);
    check(MPI_File_seek(fh, 330, MPI_SEEK_SET), "seek");
    check(MPI_File_read_all_begin(fh, buf[0], ASK, MPI_BYTE), "read_all_begin");
    check(MPI_File_read_all_end(fh, buf[0], MPI_STATUS_IGNORE), "read_all_end");
    total += SIZE - 330;
    check(MPI_File_seek_shared(fh, 280, MPI_SEEK_SET), "seek_shared");
    check(MPI_File_read_ordered_begin(fh, buf[0], ASK, MPI_BYTE), "read_ordered_begin");
    check(MPI_File_read_ordered_end(fh, buf[0], &status), "read_ordered_end");
    count(&status);

    check(MPI_File_close(&fh), "close");
    printf("rank %d read %ld bytes\n", rank, total);
    MPI_Finalize();
    return 0;
}
