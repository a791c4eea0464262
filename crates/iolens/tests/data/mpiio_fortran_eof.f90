! Fortran MPI-IO reads past the end of the file (mpif.h): each rank writes 100 integers (400
! bytes) to its own file, eof_<rank>.dat, then asks for 1024 integers four times: with
! mpi_file_read_at from offset 0, with mpi_file_read_at_all from offset 200, with mpi_file_read
! from offset 0 (after a seek) with MPI_STATUS_IGNORE, and with mpi_file_iread_at from offset 300
! completed by mpi_wait. It prints, as `rank R read B bytes`, the bytes MPI_Get_count gave for the
! first, second and fourth plus those the file held for the third (400: its status is ignored).
program mpiio_fortran_eof
    implicit none
    include 'mpif.h'
    integer, parameter :: n = 1024, written = 100
    integer :: ierr, rank, fh, got, total, request
    integer :: status(MPI_STATUS_SIZE)
    integer :: ints(n)
    integer(kind=MPI_OFFSET_KIND) :: zero, middle, near_end
    character(len=4096) :: dir, name

    call mpi_init(ierr)
    call mpi_comm_rank(MPI_COMM_WORLD, rank, ierr)
    call get_command_argument(1, dir)
    write (name, '(a, a, i0, a)') trim(dir), '/eof_', rank, '.dat'
    zero = 0
    middle = 200
    near_end = 300
    ints = rank
    call mpi_file_open(MPI_COMM_SELF, trim(name), MPI_MODE_CREATE + MPI_MODE_RDWR, MPI_INFO_NULL, fh, ierr)
    call check(ierr, 'open')
    call mpi_file_write_at(fh, zero, ints, written, MPI_INTEGER, status, ierr)
    call check(ierr, 'write_at')
    call mpi_file_sync(fh, ierr)
    call check(ierr, 'sync')
    total = 0
    call mpi_file_read_at(fh, zero, ints, n, MPI_INTEGER, status, ierr)
    call check(ierr, 'read_at')
    call mpi_get_count(status, MPI_BYTE, got, ierr)
    total = total + got
    call mpi_file_read_at_all(fh, middle, ints, n, MPI_INTEGER, status, ierr)
    call check(ierr, 'read_at_all')
    call mpi_get_count(status, MPI_BYTE, got, ierr)
    total = total + got
    call mpi_file_seek(fh, zero, MPI_SEEK_SET, ierr)
    call check(ierr, 'seek')
    call mpi_file_read(fh, ints, n, MPI_INTEGER, MPI_STATUS_IGNORE, ierr)
    call check(ierr, 'read')
    total = total + 4 * written
    call mpi_file_iread_at(fh, near_end, ints, n, MPI_INTEGER, request, ierr)
    call check(ierr, 'iread_at')
    call mpi_wait(request, status, ierr)
    call check(ierr, 'wait')
    call mpi_get_count(status, MPI_BYTE, got, ierr)
    total = total + got
    call mpi_file_close(fh, ierr)
    call check(ierr, 'close')
    print '(a, i0, a, i0, a)', 'rank ', rank, ' read ', total, ' bytes'
    call mpi_finalize(ierr)

contains

    subroutine check(code, what)
        integer, intent(in) :: code
        character(len=*), intent(in) :: what
        integer :: ignored
        if (code /= MPI_SUCCESS) then
            print *, what, ' failed: ', code
            call mpi_abort(MPI_COMM_WORLD, 1, ignored)
        end if
    end subroutine check
end program mpiio_fortran_eof
