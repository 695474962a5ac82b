package shmring

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// The seals every shared file carries. Once a file is mapped, shrinking
// it would turn the peer's accesses past the new end into SIGBUS, so an
// attaching side refuses a file that can still shrink; growing and
// changing the seals are refused too, so that the file stays what both
// sides agreed on.
const (
	sealsSet      = unix.F_SEAL_SHRINK | unix.F_SEAL_GROW | unix.F_SEAL_SEAL
	sealsRequired = unix.F_SEAL_SHRINK
)

// newMemfd returns a sealed memfd of size bytes, mapped shared.
func newMemfd(name string, size int) (*os.File, []byte, error) {
	// Shared memory is data, never code: MFD_NOEXEC_SEAL (Linux 6.3) says
	// so, and hosts with vm.memfd_noexec=2 refuse a memfd without it.
	// Older kernels do not know the flag.
	fd, err := unix.MemfdCreate(name, unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING|unix.MFD_NOEXEC_SEAL)
	if err == unix.EINVAL {
		fd, err = unix.MemfdCreate(name, unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("shmring: memfd_create: %w", err)
	}
	f := os.NewFile(uintptr(fd), name)
	if err := unix.Ftruncate(fd, int64(size)); err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("shmring: ftruncate memfd to %d bytes: %w", size, err)
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, sealsSet); err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("shmring: seal memfd: %w", err)
	}
	mem, err := mapShared(fd, size)
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, mem, nil
}

// sealedSize checks that f is a memfd on shmem sealed against
// shrinking and returns its size.
func sealedSize(f *os.File) (int64, error) {
	var size int64
	var err error
	if cerr := control(f, func(fd int) { size, err = checkSealed(fd, f.Name()) }); cerr != nil {
		return 0, fmt.Errorf("%w: %s: %v", ErrBadFiles, f.Name(), cerr)
	}
	return size, err
}

func checkSealed(fd int, name string) (int64, error) {
	seals, err := unix.FcntlInt(uintptr(fd), unix.F_GET_SEALS, 0)
	if err != nil {
		return 0, fmt.Errorf("%w: %s: no seals (not a memfd): %v", ErrBadFiles, name, err)
	}
	if seals&sealsRequired != sealsRequired {
		return 0, fmt.Errorf("%w: %s: memfd not sealed against shrinking", ErrBadFiles, name)
	}
	// A hugetlbfs memfd can be sealed too, but touching a page of it
	// when the huge page pool is empty raises SIGBUS: only shmem will do.
	var fs unix.Statfs_t
	if err := unix.Fstatfs(fd, &fs); err != nil {
		return 0, fmt.Errorf("shmring: fstatfs %s: %w", name, err)
	}
	if fs.Type != unix.TMPFS_MAGIC {
		return 0, fmt.Errorf("%w: %s: memfd on file system %#x, not shmem", ErrBadFiles, name, fs.Type)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return 0, fmt.Errorf("shmring: fstat %s: %w", name, err)
	}
	return st.Size, nil
}

func mapShared(fd int, size int) ([]byte, error) {
	mem, err := unix.Mmap(fd, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("shmring: mmap %d bytes: %w", size, err)
	}
	return mem, nil
}

// pageRound rounds n up to whole pages.
func pageRound(n int) int {
	page := os.Getpagesize()
	return (n + page - 1) &^ (page - 1)
}
