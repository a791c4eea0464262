! The calls of mpiio_fortran.f90 through the Fortran 2008 bindings (use mpi_f08), which Open MPI
! carries out through ompi_*_f functions: per rank on fortran.dat, 2 x MPI_File_write_at and
! 1 x MPI_File_write_at_all of 1024 integers (4 KiB), 1 x MPI_File_write and 1 x
! MPI_File_write_all of 512 double precision (4 KiB) after a seek, 2 x MPI_File_iwrite_at
! (MPI_Waitall), 1 x MPI_File_iwrite_at (MPI_Wait) and a split collective
! MPI_File_write_at_all_begin/end of 1024 integers; one sync; 1 x MPI_File_read_at and
! 1 x MPI_File_read_at_all of 1024 integers, 1 x MPI_File_iread_at polled by MPI_Test.
program mpiio_fortran_f08
    use mpi_f08
    implicit none
    integer, parameter :: n = 1024
    integer :: rank, i
    type(MPI_File) :: fh
    type(MPI_Request) :: requests(2), one
    logical :: done
    integer, asynchronous :: ints(n)
    double precision :: reals(n / 2)
    integer(kind=MPI_OFFSET_KIND) :: region, four_kib
    character(len=4096) :: dir

    call MPI_Init()
    call MPI_Comm_rank(MPI_COMM_WORLD, rank)
    call get_command_argument(1, dir)
    ints = rank
    reals = rank
    four_kib = 4096
    region = rank * 16 * four_kib
    ! Errors abort the job (the default handler of files is MPI_ERRORS_RETURN: set it).
    call MPI_File_set_errhandler(MPI_FILE_NULL, MPI_ERRORS_ARE_FATAL)
    call MPI_File_open(MPI_COMM_WORLD, trim(dir) // '/fortran.dat', MPI_MODE_CREATE + MPI_MODE_RDWR, &
                       MPI_INFO_NULL, fh)
    do i = 0, 1
        call MPI_File_write_at(fh, region + i * four_kib, ints, n, MPI_INTEGER, MPI_STATUS_IGNORE)
    end do
    call MPI_File_write_at_all(fh, region + 2 * four_kib, ints, n, MPI_INTEGER, MPI_STATUS_IGNORE)
    call MPI_File_seek(fh, region + 3 * four_kib, MPI_SEEK_SET)
    call MPI_File_write(fh, reals, n / 2, MPI_DOUBLE_PRECISION, MPI_STATUS_IGNORE)
    call MPI_File_write_all(fh, reals, n / 2, MPI_DOUBLE_PRECISION, MPI_STATUS_IGNORE)
    do i = 1, 2
        call MPI_File_iwrite_at(fh, region + (4 + i) * four_kib, ints, n, MPI_INTEGER, requests(i))
    end do
    call MPI_Waitall(2, requests, MPI_STATUSES_IGNORE)
    call MPI_File_iwrite_at(fh, region + 7 * four_kib, ints, n, MPI_INTEGER, one)
    call MPI_Wait(one, MPI_STATUS_IGNORE)
    call MPI_File_write_at_all_begin(fh, region + 8 * four_kib, ints, n, MPI_INTEGER)
    call MPI_File_write_at_all_end(fh, ints, MPI_STATUS_IGNORE)
    call MPI_File_sync(fh)
    ints = -1
    call MPI_File_read_at(fh, region, ints, n, MPI_INTEGER, MPI_STATUS_IGNORE)
    if (ints(n) /= rank) call MPI_Abort(MPI_COMM_WORLD, 1)
    call MPI_File_read_at_all(fh, region + four_kib, ints, n, MPI_INTEGER, MPI_STATUS_IGNORE)
    call MPI_File_iread_at(fh, region + 2 * four_kib, ints, n, MPI_INTEGER, one)
    done = .false.
    do while (.not. done)
        call MPI_Test(one, done, MPI_STATUS_IGNORE)
    end do
    call MPI_File_close(fh)
    call MPI_Finalize()
end program mpiio_fortran_f08
