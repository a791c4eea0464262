! Fortran nonblocking and split collective MPI-IO reads past the end of the file (mpif.h),
! completed by the calls that complete many requests: each rank writes 100 integers (400 bytes)
! to its own file, eofc_<rank>.dat, then asks for 1024 integers at a time (mpi_file_iread_at) at
! offsets inside it, completing them by
!   mpi_wait with a status (1 read: the probe, below),
!   mpi_waitall with statuses (2 reads) and with MPI_STATUSES_IGNORE (2 reads),
!   mpi_waitany with a status (2 reads),
!   mpi_waitsome in a loop with statuses (3 reads),
!   mpi_test in a loop with a status (1 read),
!   mpi_testall in a loop with statuses (1 read, beside a barrier's request),
!   mpi_testany in a loop with a status (2 reads),
!   mpi_testsome in a loop with statuses (3 reads),
! then the split collective mpi_file_read_at_all_begin/_end, with a status and with
! MPI_STATUS_IGNORE (2 reads): 19 reads of 4096 bytes in all. It prints, as
! `rank R read B bytes`, what MPI_Get_count said each read moved where it had a status, plus what
! the status would have said where it ignored it: what the file held past the offset, except
! that Open MPI's ROMIO says a nonblocking read moved all it asked for, which the probe tells.
! mpi_testall's loop has one read beside an mpi_ibarrier, as in the C program: MPICH 4.0's
! MPI_Testall over two of ROMIO's requests, one done and one not, fails an assertion.
program mpiio_fortran_eof_completions
    implicit none
    include 'mpif.h'
    integer, parameter :: n = 1024, written = 100, file_bytes = 4 * written
    integer :: ierr, rank, fh, got, total, index, outcount, done, j, k
    integer :: requests(3), indices(3)
    integer :: status(MPI_STATUS_SIZE), statuses(MPI_STATUS_SIZE, 3)
    integer :: ints(n, 3)
    logical :: short_statuses, flag
    integer(kind=MPI_OFFSET_KIND) :: offsets(3)
    character(len=4096) :: dir, name

    call mpi_init(ierr)
    call mpi_comm_rank(MPI_COMM_WORLD, rank, ierr)
    call get_command_argument(1, dir)
    write (name, '(a, a, i0, a)') trim(dir), '/eofc_', rank, '.dat'
    ints = rank
    call mpi_file_open(MPI_COMM_SELF, trim(name), MPI_MODE_CREATE + MPI_MODE_RDWR, MPI_INFO_NULL, fh, ierr)
    call check(ierr, 'open')
    offsets(1) = 0
    call mpi_file_write_at(fh, offsets(1), ints, written, MPI_INTEGER, status, ierr)
    call check(ierr, 'write_at')
    call mpi_file_sync(fh, ierr)
    call check(ierr, 'sync')
    total = 0

    ! The probe: a nonblocking read at 300, completed by mpi_wait.
    offsets(1) = 300
    call post(1)
    call mpi_wait(requests(1), status, ierr)
    call check(ierr, 'wait')
    call mpi_get_count(status, MPI_BYTE, got, ierr)
    short_statuses = got == file_bytes - 300
    total = total + got

    ! mpi_waitall with statuses.
    offsets(1:2) = [0, 200]
    call post(2)
    call mpi_waitall(2, requests, statuses, ierr)
    call check(ierr, 'waitall')
    do j = 1, 2
        call mpi_get_count(statuses(1, j), MPI_BYTE, got, ierr)
        total = total + got
    end do

    ! mpi_waitall, statuses ignored.
    offsets(1:2) = [100, 250]
    call post(2)
    call mpi_waitall(2, requests, MPI_STATUSES_IGNORE, ierr)
    call check(ierr, 'waitall')
    total = total + told(offsets(1)) + told(offsets(2))

    ! mpi_waitany with a status.
    offsets(1:2) = [0, 300]
    call post(2)
    do k = 1, 2
        call mpi_waitany(2, requests, index, status, ierr)
        call check(ierr, 'waitany')
        call mpi_get_count(status, MPI_BYTE, got, ierr)
        total = total + got
    end do

    ! mpi_waitsome until all are done, with statuses.
    offsets = [50, 150, 350]
    call post(3)
    done = 0
    do while (done < 3)
        call mpi_waitsome(3, requests, outcount, indices, statuses, ierr)
        call check(ierr, 'waitsome')
        do j = 1, outcount
            call mpi_get_count(statuses(1, j), MPI_BYTE, got, ierr)
            total = total + got
        end do
        done = done + outcount
    end do

    ! mpi_test until done, with a status.
    offsets(1) = 60
    call post(1)
    flag = .false.
    do while (.not. flag)
        call mpi_test(requests(1), flag, status, ierr)
        call check(ierr, 'test')
    end do
    call mpi_get_count(status, MPI_BYTE, got, ierr)
    total = total + got

    ! mpi_testall until done, with statuses: a barrier's request, then a read.
    call mpi_ibarrier(MPI_COMM_SELF, requests(1), ierr)
    call check(ierr, 'ibarrier')
    offsets(2) = 70
    call mpi_file_iread_at(fh, offsets(2), ints(1, 2), n, MPI_INTEGER, requests(2), ierr)
    call check(ierr, 'iread_at')
    flag = .false.
    do while (.not. flag)
        call mpi_testall(2, requests, flag, statuses, ierr)
        call check(ierr, 'testall')
    end do
    call mpi_get_count(statuses(1, 2), MPI_BYTE, got, ierr)
    total = total + got

    ! mpi_testany until both are done, with a status.
    offsets(1:2) = [150, 390]
    call post(2)
    done = 0
    do while (done < 2)
        call mpi_testany(2, requests, index, flag, status, ierr)
        call check(ierr, 'testany')
        if (flag .and. index /= MPI_UNDEFINED) then
            call mpi_get_count(status, MPI_BYTE, got, ierr)
            total = total + got
            done = done + 1
        end if
    end do

    ! mpi_testsome until all are done, with statuses.
    offsets = [20, 220, 380]
    call post(3)
    done = 0
    do while (done < 3)
        call mpi_testsome(3, requests, outcount, indices, statuses, ierr)
        call check(ierr, 'testsome')
        do j = 1, outcount
            call mpi_get_count(statuses(1, j), MPI_BYTE, got, ierr)
            total = total + got
        end do
        done = done + outcount
    end do

    ! The split collective, with a status and ignoring it (told right by both libraries).
    offsets(1) = 120
    call mpi_file_read_at_all_begin(fh, offsets(1), ints, n, MPI_INTEGER, ierr)
    call check(ierr, 'read_at_all_begin')
    call mpi_file_read_at_all_end(fh, ints, status, ierr)
    call check(ierr, 'read_at_all_end')
    call mpi_get_count(status, MPI_BYTE, got, ierr)
    total = total + got
    offsets(1) = 330
    call mpi_file_read_at_all_begin(fh, offsets(1), ints, n, MPI_INTEGER, ierr)
    call check(ierr, 'read_at_all_begin')
    call mpi_file_read_at_all_end(fh, ints, MPI_STATUS_IGNORE, ierr)
    call check(ierr, 'read_at_all_end')
    total = total + file_bytes - 330

    call mpi_file_close(fh, ierr)
    call check(ierr, 'close')
    print '(a, i0, a, i0, a)', 'rank ', rank, ' read ', total, ' bytes'
    call mpi_finalize(ierr)

contains

    ! Posts reads of n integers at offsets(1:count).
    subroutine post(count)
        integer, intent(in) :: count
        integer :: i
        do i = 1, count
            call mpi_file_iread_at(fh, offsets(i), ints(1, i), n, MPI_INTEGER, requests(i), ierr)
            call check(ierr, 'iread_at')
        end do
    end subroutine post

    ! What the status of a nonblocking read at `offset` would have said.
    integer function told(offset)
        integer(kind=MPI_OFFSET_KIND), intent(in) :: offset
        if (short_statuses) then
            told = file_bytes - int(offset)
        else
            told = 4 * n
        end if
    end function told

    subroutine check(code, what)
        integer, intent(in) :: code
        character(len=*), intent(in) :: what
        integer :: ignored
        if (code /= MPI_SUCCESS) then
            print *, what, ' failed: ', code
            call mpi_abort(MPI_COMM_WORLD, 1, ignored)
        end if
    end subroutine check
end program mpiio_fortran_eof_completions
