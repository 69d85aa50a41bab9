// Recorded workloads written as the recorder would record them (see workloads.h).
#include "workloads.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <fmt/format.h>

#include "trace_builder.h"

namespace fsrr::test {

uint64_t file_size(int i) {
  constexpr uint64_t sizes[] = {1024, 4096, 10240, 100000, 0};
  return sizes[i % 5];
}

namespace {

// getdents64 bytes for a directory holding `names` (plus "." and ".."), all in one call.
int64_t dirent_bytes(const std::vector<std::string>& names) {
  auto rec = [](size_t len) { return static_cast<int64_t>((19 + len + 1 + 7) & ~size_t{7}); };
  int64_t n = rec(1) + rec(2);
  for (const auto& s : names) n += rec(s.size());
  return n;
}

}  // namespace

// cp -a /src /dst by coreutils 9: one thread, copy_file_range after a failed reflink.
void record_cp(const std::string& path, int files) {
  trace_builder b(path);
  const thread_id t = b.thread(1000, 1000, 1);
  b.tree_dir("/src");
  std::vector<std::string> names;
  for (int i = 0; i < files; ++i) {
    names.push_back(fmt::format("f{}", i));
    b.tree_file(fmt::format("/src/f{}", i), file_size(i));
  }
  const file_id src_dir = b.file(1, S_IFDIR), dst_dir = b.file(2, S_IFDIR);
  event& st = b.next(t, op::newfstatat);
  st.path = b.path("/src");
  st.file = src_dir;
  st.flags = AT_SYMLINK_NOFOLLOW;
  event& mk = b.next(t, op::mkdir);
  mk.path = b.path("/dst");
  mk.mode = 0700;
  event& od = b.next(t, op::openat, 3);
  od.path = b.path("/src");
  od.file = src_dir;
  od.flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
  event& gd = b.next(t, op::getdents64, dirent_bytes(names));
  gd.fd = 3;
  gd.file = src_dir;
  gd.size = 32768;
  const event first_gd = gd;
  event& gd2 = b.next(t, op::getdents64, 0);
  gd2.fd = first_gd.fd;
  gd2.file = first_gd.file;
  gd2.size = first_gd.size;
  b.next(t, op::close).fd = 3;
  for (int i = 0; i < files; ++i) {
    const path_id src = b.path(fmt::format("/src/f{}", i));
    const path_id dst = b.path(fmt::format("/dst/f{}", i));
    const file_id in = b.file(100 + i), out = b.file(100000 + i);
    const int64_t n = static_cast<int64_t>(file_size(i));
    event& s = b.next(t, op::newfstatat);
    s.path = src;
    s.file = in;
    s.flags = AT_SYMLINK_NOFOLLOW;
    event& o1 = b.next(t, op::openat, 4);
    o1.path = src;
    o1.file = in;
    o1.flags = O_RDONLY | O_NOFOLLOW;
    event& f1 = b.next(t, op::fstat);
    f1.fd = 4;
    f1.file = in;
    event& o2 = b.next(t, op::openat, 5);
    o2.path = dst;
    o2.file = out;
    o2.flags = O_WRONLY | O_CREAT | O_EXCL;
    o2.mode = 0600;
    event& cl = b.next(t, op::ioctl, -EOPNOTSUPP);
    cl.fd = 5;
    cl.fd2 = 4;
    cl.file = out;
    cl.file2 = in;
    cl.aux = 0x40049409;  // FICLONE
    event& c1 = b.next(t, op::copy_file_range, n);
    c1.fd = 4;
    c1.fd2 = 5;
    c1.file = in;
    c1.file2 = out;
    c1.offset = c1.offset2 = -1;  // NULL: at the fds' positions
    c1.size = 0x7fffffffc0000000ull;
    if (n > 0) {
      const event first = c1;
      event& c2 = b.next(t, op::copy_file_range, 0);
      c2.fd = first.fd;
      c2.fd2 = first.fd2;
      c2.file = first.file;
      c2.file2 = first.file2;
      c2.size = first.size;
      c2.offset = c2.offset2 = -1;
    }
    event& ut = b.next(t, op::utimensat);
    ut.fd = 5;
    ut.file = out;
    ut.offset = 1'600'000'000'000'000'000;
    ut.offset2 = 1'600'000'000'000'000'000;
    event& ch = b.next(t, op::fchmod);
    ch.fd = 5;
    ch.file = out;
    ch.mode = 0644;
    b.next(t, op::close).fd = 5;
    b.next(t, op::close).fd = 4;
  }
  event& dm = b.next(t, op::chmod);
  dm.path = b.path("/dst");
  dm.file = dst_dir;
  dm.mode = 0755;
  b.next(t, op::exit);
  b.finish();
}

// rsync -a /src/ /dst/: generator, sender and receiver processes; the receiver writes a
// temporary name and renames it; the generator's last pass sees the final names.
void record_rsync(const std::string& path, int files) {
  trace_builder b(path);
  const thread_id gen = b.thread(2000, 2000, 1);
  const thread_id snd = b.thread(2001, 2001, 2);
  const thread_id rcv = b.thread(2002, 2002, 3);
  b.tree_dir("/src");
  for (int i = 0; i < files; ++i) b.tree_file(fmt::format("/src/f{}", i), file_size(i));
  event& mk = b.next(gen, op::mkdir);
  mk.path = b.path("/dst");
  mk.mode = 0755;
  for (int i = 0; i < files; ++i) {
    const path_id src = b.path(fmt::format("/src/f{}", i));
    const path_id dst = b.path(fmt::format("/dst/f{}", i));
    const path_id tmp = b.path(fmt::format("/dst/.f{}.XXXXXX", i));
    const file_id in = b.file(100 + i), out = b.file(100000 + i);
    const int64_t n = static_cast<int64_t>(file_size(i));
    event& l = b.next(gen, op::lstat, -ENOENT);
    l.path = dst;
    event& o = b.next(snd, op::openat, 3);
    o.path = src;
    o.file = in;
    o.flags = O_RDONLY;
    event& r = b.next(snd, op::read, n);
    r.fd = 3;
    r.file = in;
    r.size = 262144;
    event& r2 = b.next(snd, op::read, 0);
    r2.fd = 3;
    r2.file = in;
    r2.size = 262144;
    r2.offset = n;
    b.next(snd, op::close).fd = 3;
    event& ot = b.next(rcv, op::openat, 4);
    ot.path = tmp;
    ot.file = out;
    ot.flags = O_RDWR | O_CREAT | O_EXCL;
    ot.mode = 0600;
    if (n > 0) {
      event& w = b.next(rcv, op::write, n);
      w.fd = 4;
      w.file = out;
      w.size = static_cast<uint64_t>(n);
    }
    b.next(rcv, op::close).fd = 4;
    event& ch = b.next(rcv, op::fchmodat);
    ch.path = tmp;
    ch.file = out;
    ch.mode = 0644;
    event& mv = b.next(rcv, op::rename);
    mv.path = tmp;
    mv.path2 = dst;
    mv.file = out;
  }
  for (int i = 0; i < files; ++i) {
    event& l = b.next(gen, op::lstat);
    l.path = b.path(fmt::format("/dst/f{}", i));
    l.file = b.file(100000 + i);
  }
  b.finish();
}

}  // namespace fsrr::test
