"""Stores through a shared mapping, as LMDB and MongoDB's engines write, for the end-to-end
tests: in DIR, `db` of 5 pages + 100 bytes, mapped shared; bytes stored in page 0, page 2
and the last, partial page; flush() (msync MS_SYNC); page 0 stored again (after writeback on
a disk file system, the kernel write-protected it: it faults again).

With "mprotect" as its second argument it maps `db` read-only instead (libc's mmap, through
ctypes), makes pages 1 and 2 writable with mprotect, stores 10 bytes in page 1 and 5 in page
2, and msyncs the whole mapping."""
import ctypes
import mmap
import os
import sys

path = os.path.join(sys.argv[1], "db")
size = 5 * 4096 + 100
with open(path, "wb") as f:
    f.truncate(size)
if len(sys.argv) > 2 and sys.argv[2] == "mprotect":
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                          ctypes.c_int, ctypes.c_long]
    libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    libc.msync.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    fd = os.open(path, os.O_RDWR)
    addr = libc.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
    if addr in (None, ctypes.c_void_p(-1).value):
        sys.exit("mmap: " + os.strerror(ctypes.get_errno()))
    if libc.mprotect(addr + 4096, 2 * 4096, mmap.PROT_READ | mmap.PROT_WRITE) != 0:
        sys.exit("mprotect: " + os.strerror(ctypes.get_errno()))
    ctypes.memset(addr + 4096 + 10, ord("p"), 10)
    ctypes.memset(addr + 2 * 4096, ord("q"), 5)
    if libc.msync(addr, size, 4) != 0:  # MS_SYNC
        sys.exit("msync: " + os.strerror(ctypes.get_errno()))
    os.close(fd)
    sys.exit(0)
with open(path, "r+b") as f:
    m = mmap.mmap(f.fileno(), 0)
    m[0:10] = b"x" * 10
    m[8192:8200] = b"y" * 8
    m[5 * 4096 + 50:5 * 4096 + 60] = b"z" * 10
    m.flush()
    m[0:4] = b"abcd"
    m.close()
