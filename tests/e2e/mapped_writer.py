"""Stores through a shared mapping, as LMDB and MongoDB's engines write, for the end-to-end
tests: in DIR, `db` of 5 pages + 100 bytes, mapped shared; bytes stored in page 0, page 2
and the last, partial page; flush() (msync MS_SYNC); page 0 stored again (after writeback on
a disk file system, the kernel write-protected it: it faults again)."""
import mmap
import os
import sys

path = os.path.join(sys.argv[1], "db")
with open(path, "wb") as f:
    f.truncate(5 * 4096 + 100)
with open(path, "r+b") as f:
    m = mmap.mmap(f.fileno(), 0)
    m[0:10] = b"x" * 10
    m[8192:8200] = b"y" * 8
    m[5 * 4096 + 50:5 * 4096 + 60] = b"z" * 10
    m.flush()
    m[0:4] = b"abcd"
    m.close()
