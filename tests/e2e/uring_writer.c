/* A program that does its file I/O through io_uring (liburing), as storage engines do, for
 * the end-to-end tests: in DIR, 16 x 4 KiB writes to `data` four at a time, each group's last
 * write linked to an fdatasync; a vectored write (1000 + 3000 bytes) to `other` as a
 * registered file; a read of registered buffers and a plain read back from `data`; a write
 * at the file's position (500 bytes at 65536); 100 bytes at the registered `other`'s position
 * (2000, where lseek on its fd put it: one open file); an fallocate of `other` to 1 MiB; two
 * writes of 300 bytes at the position of `third`, registered and its fd closed.
 * `data` ends 66036 bytes long, `other` 1 MiB, `third` 600 bytes; 70736 bytes are written.
 * With "names" as its second argument it then works on names through the ring too: mkdirat
 * `d`; openat `d/new` (O_CREAT); a write of 4096 bytes to it linked to an fsync linked to its
 * close; statx of `d/new`; renameat to `d/renamed`; linkat `d/hard`; symlinkat `d/soft` ->
 * `renamed`; unlinkat `d/hard`; an openat of `d/missing` that fails (ENOENT); openat2 of
 * `data` read-only and its close; FILES_UPDATE putting `data` in slot 1 and 100 bytes written
 * at 70000 through it; fsetxattr of user.fsrr (7 bytes) on `data`, setxattr of user.other (3
 * bytes) on `d/renamed`, and the fgetxattr and getxattr that read them back.
 * With "streams" a child process reads the first 16 KiB of `data` through a ring of its own,
 * SENDs them over a Unix socket pair, reads the first 4 KiB again and WRITEs them into a pipe;
 * the parent RECVs the 16 KiB, writes them to `copy`, READs the 4 KiB from the pipe and writes
 * them to `copy2`: copies made through rings, byte for byte.
 * With "splice" it moves 8 KiB of `data` through pipes into `spliced` and the registered
 * `other` (SPLICE, TEE, SPLICE, the last from a registered pipe).
 * With "direct" it opens `data` into a fixed-file slot (a direct descriptor), reads through
 * it, gives the slot an fd (FIXED_FD_INSTALL) and reads there, and closes both. Exit 0 on
 * success. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

static struct io_uring ring;

static void die(const char* what, int err) {
  fprintf(stderr, "uring_writer: %s: %s\n", what, strerror(err < 0 ? -err : err));
  exit(1);
}

static struct io_uring_sqe* sqe(void) {
  struct io_uring_sqe* s = io_uring_get_sqe(&ring);
  if (!s) die("no free SQE", EBUSY);
  return s;
}

/* Submits what is queued and reaps `n` completions; each must have `want` (or, with want
 * < 0, any non-negative result). */
static void complete(unsigned n, int want) {
  int r = io_uring_submit(&ring);
  if (r < 0) die("io_uring_submit", r);
  for (unsigned i = 0; i < n; i++) {
    struct io_uring_cqe* c;
    if ((r = io_uring_wait_cqe(&ring, &c)) < 0) die("io_uring_wait_cqe", r);
    if (c->res < 0 || (want >= 0 && c->res != want && c->user_data != 99)) {
      fprintf(stderr, "uring_writer: request %llu: result %d\n", (unsigned long long)c->user_data,
              c->res);
      exit(1);
    }
    io_uring_cqe_seen(&ring, c);
  }
}

int main(int argc, char** argv) {
  static char block[4096], big[3000], small[1000], back[4096], fixed[4096];
  char path[4096];
  int data, other, r;

  if (argc < 2) return 2;
  memset(block, 'u', sizeof block);
  memset(big, 'v', sizeof big);
  memset(small, 'w', sizeof small);
  snprintf(path, sizeof path, "%s/data", argv[1]);
  if ((data = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644)) < 0) die(path, errno);
  snprintf(path, sizeof path, "%s/other", argv[1]);
  if ((other = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644)) < 0) die(path, errno);
  if ((r = io_uring_queue_init(8, &ring, 0)) < 0) die("io_uring_queue_init", r);
  snprintf(path, sizeof path, "%s/third", argv[1]);
  int registered[2] = {other, open(path, O_RDWR | O_CREAT | O_TRUNC, 0644)};
  if (registered[1] < 0) die(path, errno);
  if ((r = io_uring_register_files(&ring, registered, 2)) < 0) die("register files", r);
  close(registered[1]); /* the ring holds it */
  struct iovec reg = {fixed, sizeof fixed};
  if ((r = io_uring_register_buffers(&ring, &reg, 1)) < 0) die("register buffers", r);

  for (int group = 0; group < 4; group++) {
    for (int i = 0; i < 4; i++) {
      struct io_uring_sqe* s = sqe();
      io_uring_prep_write(s, data, block, sizeof block, (group * 4 + i) * 4096);
      s->user_data = group * 4 + i;
      if (i == 3) s->flags |= IOSQE_IO_LINK;
    }
    struct io_uring_sqe* s = sqe();
    io_uring_prep_fsync(s, data, IORING_FSYNC_DATASYNC);
    s->user_data = 99;
    complete(5, sizeof block);
  }

  struct iovec two[2] = {{small, sizeof small}, {big, sizeof big}};
  struct io_uring_sqe* s = sqe();
  io_uring_prep_writev(s, 0, two, 2, 0);
  s->flags |= IOSQE_FIXED_FILE;
  complete(1, sizeof small + sizeof big);

  s = sqe();
  io_uring_prep_read_fixed(s, data, fixed, sizeof fixed, 0, 0);
  s = sqe();
  io_uring_prep_read(s, data, back, sizeof back, 8192);
  complete(2, sizeof back);

  if (lseek(data, 65536, SEEK_SET) != 65536) die("lseek", errno);
  s = sqe();
  io_uring_prep_write(s, data, block, 500, -1);  /* at the file's position */
  complete(1, 500);

  if (lseek(other, 2000, SEEK_SET) != 2000) die("lseek", errno);
  s = sqe();
  io_uring_prep_write(s, 0, block, 100, -1); /* registered `other`, at its position */
  s->flags |= IOSQE_FIXED_FILE;
  complete(1, 100);

  for (int i = 0; i < 2; i++) {
    s = sqe();
    io_uring_prep_write(s, 1, block, 300, -1); /* `third`, whose fd is closed */
    s->flags |= IOSQE_FIXED_FILE;
    complete(1, 300);
  }

  s = sqe();
  io_uring_prep_fallocate(s, 0, 0, 0, 1 << 20);
  s->flags |= IOSQE_FIXED_FILE;
  complete(1, 0);

  if (argc > 2 && strcmp(argv[2], "names") == 0) {
    char dir[4096], renamed[4096], hard[4096], soft[4096], missing[4096];
    struct statx st;
    struct open_how how = {.flags = O_RDONLY};
    int fd;
    snprintf(dir, sizeof dir, "%s/d", argv[1]);
    snprintf(path, sizeof path, "%s/d/new", argv[1]);
    snprintf(renamed, sizeof renamed, "%s/d/renamed", argv[1]);
    snprintf(hard, sizeof hard, "%s/d/hard", argv[1]);
    snprintf(soft, sizeof soft, "%s/d/soft", argv[1]);
    snprintf(missing, sizeof missing, "%s/d/missing", argv[1]);
    io_uring_prep_mkdirat(sqe(), AT_FDCWD, dir, 0755);
    complete(1, 0);
    io_uring_prep_openat(sqe(), AT_FDCWD, path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    io_uring_submit(&ring);
    {
      struct io_uring_cqe* c;
      if ((r = io_uring_wait_cqe(&ring, &c)) < 0) die("io_uring_wait_cqe", r);
      if ((fd = c->res) < 0) die("openat d/new", fd);
      io_uring_cqe_seen(&ring, c);
    }
    s = sqe();
    io_uring_prep_write(s, fd, block, sizeof block, 0);
    s->flags |= IOSQE_IO_LINK;
    s = sqe();
    io_uring_prep_fsync(s, fd, 0);
    s->flags |= IOSQE_IO_LINK;
    io_uring_prep_close(sqe(), fd);
    complete(3, -1);
    io_uring_prep_statx(sqe(), AT_FDCWD, path, 0, STATX_BASIC_STATS, &st);
    complete(1, 0);
    if (st.stx_size != sizeof block) die("statx size", EINVAL);
    io_uring_prep_renameat(sqe(), AT_FDCWD, path, AT_FDCWD, renamed, 0);
    complete(1, 0);
    io_uring_prep_linkat(sqe(), AT_FDCWD, renamed, AT_FDCWD, hard, 0);
    complete(1, 0);
    io_uring_prep_symlinkat(sqe(), "renamed", AT_FDCWD, soft);
    complete(1, 0);
    io_uring_prep_unlinkat(sqe(), AT_FDCWD, hard, 0);
    complete(1, 0);
    io_uring_prep_openat(sqe(), AT_FDCWD, missing, O_RDONLY, 0);
    io_uring_submit(&ring);
    {
      struct io_uring_cqe* c;
      if ((r = io_uring_wait_cqe(&ring, &c)) < 0) die("io_uring_wait_cqe", r);
      if (c->res != -ENOENT) die("openat d/missing", c->res < 0 ? c->res : EINVAL);
      io_uring_cqe_seen(&ring, c);
    }
    snprintf(path, sizeof path, "%s/data", argv[1]);
    io_uring_prep_openat2(sqe(), AT_FDCWD, path, &how);
    io_uring_submit(&ring);
    {
      struct io_uring_cqe* c;
      if ((r = io_uring_wait_cqe(&ring, &c)) < 0) die("io_uring_wait_cqe", r);
      if ((fd = c->res) < 0) die("openat2 data", fd);
      io_uring_cqe_seen(&ring, c);
    }
    io_uring_prep_close(sqe(), fd);
    complete(1, 0);
    /* the ring's table of registered files changed through the ring: slot 1 now `data`, and
     * a write through it */
    int update[1] = {data};
    io_uring_prep_files_update(sqe(), update, 1, 1);
    complete(1, 1);
    s = sqe();
    io_uring_prep_write(s, 1, block, 100, 70000);
    s->flags |= IOSQE_FIXED_FILE;
    complete(1, 100);
    /* attributes through the ring: user.fsrr on `data` by its fd, user.other on d/renamed by
     * its name; both read back */
    static char value[16];
    io_uring_prep_fsetxattr(sqe(), data, "user.fsrr", "value12", 0, 7);
    complete(1, 0);
    io_uring_prep_setxattr(sqe(), "user.other", "abc", renamed, 0, 3);
    complete(1, 0);
    io_uring_prep_fgetxattr(sqe(), data, "user.fsrr", value, sizeof value);
    complete(1, 7);
    io_uring_prep_getxattr(sqe(), "user.other", value, renamed, sizeof value);
    complete(1, 3);
  }
  if (argc > 2 && strcmp(argv[2], "streams") == 0) {
    static char buf[16384], got[16384];
    int sv[2], pipefd[2], copy, copy2, status;
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0) die("socketpair", errno);
    if (pipe(pipefd) < 0) die("pipe", errno);
    pid_t child = fork();
    if (child < 0) die("fork", errno);
    if (child == 0) { /* a ring of its own: what it reads, it sends */
      if ((r = io_uring_queue_init(8, &ring, 0)) < 0) die("io_uring_queue_init", r);
      io_uring_prep_read(sqe(), data, buf, sizeof buf, 0);
      complete(1, sizeof buf);
      io_uring_prep_send(sqe(), sv[0], buf, sizeof buf, 0);
      complete(1, sizeof buf);
      io_uring_prep_read(sqe(), data, buf, 4096, 0);
      complete(1, 4096);
      io_uring_prep_write(sqe(), pipefd[1], buf, 4096, -1);
      complete(1, 4096);
      _exit(0);
    }
    if (waitpid(child, &status, 0) != child || status != 0) die("child", ECHILD);
    io_uring_prep_recv(sqe(), sv[1], got, sizeof got, MSG_WAITALL);
    complete(1, sizeof got);
    snprintf(path, sizeof path, "%s/copy", argv[1]);
    if ((copy = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644)) < 0) die(path, errno);
    io_uring_prep_write(sqe(), copy, got, sizeof got, 0);
    complete(1, sizeof got);
    io_uring_prep_read(sqe(), pipefd[0], buf, 4096, -1);
    complete(1, 4096);
    snprintf(path, sizeof path, "%s/copy2", argv[1]);
    if ((copy2 = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644)) < 0) die(path, errno);
    io_uring_prep_write(sqe(), copy2, buf, 4096, 0);
    complete(1, 4096);
    close(copy);
    close(copy2);
  }
  if (argc > 2 && strcmp(argv[2], "splice") == 0) {
    /* 8 KiB of `data` from 4096 on SPLICEd into a pipe and TEEd into a second one; the
     * first pipe's bytes SPLICEd into `spliced` at 0, the second's (its read end registered)
     * into the registered `other` at its position (2100, after the 100 bytes written there) */
    int p[2], q[2], spliced;
    if (pipe(p) < 0 || pipe(q) < 0) die("pipe", errno);
    io_uring_prep_splice(sqe(), data, 4096, p[1], -1, 8192, 0);
    complete(1, 8192);
    io_uring_prep_tee(sqe(), p[0], q[1], 8192, 0);
    complete(1, 8192);
    snprintf(path, sizeof path, "%s/spliced", argv[1]);
    if ((spliced = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644)) < 0) die(path, errno);
    io_uring_prep_splice(sqe(), p[0], -1, spliced, 0, 8192, 0);
    complete(1, 8192);
    /* the second pipe's read end registered in slot 1 (once `third`'s): both sides fixed */
    if ((r = io_uring_register_files_update(&ring, 1, &q[0], 1)) != 1) die("files update", r);
    s = sqe();
    io_uring_prep_splice(s, 1, -1, 0, -1, 8192, SPLICE_F_FD_IN_FIXED);
    s->flags |= IOSQE_FIXED_FILE;
    complete(1, 8192);
    close(spliced);
  }
  if (argc > 2 && strcmp(argv[2], "direct") == 0) {
    /* `data` opened into slot 1 (a direct descriptor), 4 KiB read through the slot, the slot
     * given an fd (FIXED_FD_INSTALL), 100 bytes read with pread on that fd, the slot closed
     * through the ring, the fd closed */
    static char got[4096];
    int installed;
    snprintf(path, sizeof path, "%s/data", argv[1]);
    io_uring_prep_openat_direct(sqe(), AT_FDCWD, path, O_RDONLY, 0, 1);
    complete(1, 0);
    s = sqe();
    io_uring_prep_read(s, 1, got, sizeof got, 4096);
    s->flags |= IOSQE_FIXED_FILE;
    complete(1, sizeof got);
    s = sqe();  /* IORING_OP_FIXED_FD_INSTALL (6.8; liburing 2.3 has no helper for it) */
    io_uring_prep_rw(54, s, 1, NULL, 0, 0);
    s->flags |= IOSQE_FIXED_FILE;
    io_uring_submit(&ring);
    {
      struct io_uring_cqe* c;
      if ((r = io_uring_wait_cqe(&ring, &c)) < 0) die("io_uring_wait_cqe", r);
      if ((installed = c->res) < 0) die("fixed_fd_install", installed);
      io_uring_cqe_seen(&ring, c);
    }
    if (pread(installed, got, 100, 0) != 100) die("pread", errno);
    io_uring_prep_close_direct(sqe(), 1);
    complete(1, 0);
    close(installed);
  }
  io_uring_queue_exit(&ring);
  close(data);
  close(other);
  return 0;
}
