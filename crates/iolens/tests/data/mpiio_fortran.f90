! MPI-IO through the Fortran bindings (mpif.h), calls and bytes known exactly (per rank), on
! fortran.dat: 2 x mpi_file_write_at and 1 x mpi_file_write_at_all of 1024 integers (4 KiB),
! 1 x mpi_file_write and 1 x mpi_file_write_all of 512 double precision (4 KiB) after a seek,
! 2 x mpi_file_iwrite_at (mpi_waitall), 1 x mpi_file_iwrite_at (mpi_wait) and a split collective
! mpi_file_write_at_all_begin/end of 1024 integers; one sync; 1 x mpi_file_read_at and
! 1 x mpi_file_read_at_all of 1024 integers, 1 x mpi_file_iread_at polled by mpi_test; first, an
! open of a file in a missing directory, which fails.
program mpiio_fortran
    implicit none
    include 'mpif.h'
    integer, parameter :: n = 1024
    integer :: ierr, rank, fh, i, one, missing
    integer :: status(MPI_STATUS_SIZE), statuses(MPI_STATUS_SIZE, 2), requests(2)
    logical :: done
    integer :: ints(n)
    double precision :: reals(n / 2)
    integer(kind=MPI_OFFSET_KIND) :: region, four_kib
    character(len=4096) :: dir

    call mpi_init(ierr)
    call mpi_comm_rank(MPI_COMM_WORLD, rank, ierr)
    call get_command_argument(1, dir)
    ints = rank
    reals = rank
    four_kib = 4096
    region = rank * 16 * four_kib
    call mpi_file_open(MPI_COMM_WORLD, trim(dir) // '/missing/x.dat', MPI_MODE_RDONLY, MPI_INFO_NULL, &
                       missing, ierr)
    if (ierr == MPI_SUCCESS) call check(1, 'open of a missing file')
    call mpi_file_open(MPI_COMM_WORLD, trim(dir) // '/fortran.dat', MPI_MODE_CREATE + MPI_MODE_RDWR, &
                       MPI_INFO_NULL, fh, ierr)
    call check(ierr, 'open')
    do i = 0, 1
        call mpi_file_write_at(fh, region + i * four_kib, ints, n, MPI_INTEGER, status, ierr)
        call check(ierr, 'write_at')
    end do
    call mpi_file_write_at_all(fh, region + 2 * four_kib, ints, n, MPI_INTEGER, status, ierr)
    call check(ierr, 'write_at_all')
    call mpi_file_seek(fh, region + 3 * four_kib, MPI_SEEK_SET, ierr)
    call mpi_file_write(fh, reals, n / 2, MPI_DOUBLE_PRECISION, status, ierr)
    call check(ierr, 'write')
    call mpi_file_write_all(fh, reals, n / 2, MPI_DOUBLE_PRECISION, status, ierr)
    call check(ierr, 'write_all')
    do i = 1, 2
        call mpi_file_iwrite_at(fh, region + (4 + i) * four_kib, ints, n, MPI_INTEGER, requests(i), ierr)
        call check(ierr, 'iwrite_at')
    end do
    call mpi_waitall(2, requests, statuses, ierr)
    call check(ierr, 'waitall')
    call mpi_file_iwrite_at(fh, region + 7 * four_kib, ints, n, MPI_INTEGER, one, ierr)
    call check(ierr, 'iwrite_at')
    call mpi_wait(one, status, ierr)
    call check(ierr, 'wait')
    call mpi_file_write_at_all_begin(fh, region + 8 * four_kib, ints, n, MPI_INTEGER, ierr)
    call check(ierr, 'write_at_all_begin')
    call mpi_file_write_at_all_end(fh, ints, status, ierr)
    call check(ierr, 'write_at_all_end')
    call mpi_file_sync(fh, ierr)
    call check(ierr, 'sync')
    ints = -1
    call mpi_file_read_at(fh, region, ints, n, MPI_INTEGER, status, ierr)
    call check(ierr, 'read_at')
    if (ints(n) /= rank) call check(1, 'read_at data')
    call mpi_file_read_at_all(fh, region + four_kib, ints, n, MPI_INTEGER, status, ierr)
    call check(ierr, 'read_at_all')
    call mpi_file_iread_at(fh, region + 2 * four_kib, ints, n, MPI_INTEGER, one, ierr)
    call check(ierr, 'iread_at')
    done = .false.
    do while (.not. done)
        call mpi_test(one, done, status, ierr)
        call check(ierr, 'test')
    end do
    call mpi_file_close(fh, ierr)
    call check(ierr, 'close')
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
end program mpiio_fortran
