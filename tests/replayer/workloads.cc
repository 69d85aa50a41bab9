// Recorded workloads written as the recorder would record them (see workloads.h).
#include "workloads.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <fmt/format.h>

#include "cp_model.h"
#include "trace_builder.h"

namespace fsrr::test {

uint64_t file_size(int i) {
  constexpr uint64_t sizes[] = {1024, 4096, 10240, 100000, 0};
  return sizes[i % 5];
}

// cp -a /src /dst by coreutils 9, as every test and benchmark models it (cp_model.h).
void record_cp(const std::string& path, int files) {
  std::vector<uint64_t> sizes;
  for (int i = 0; i < files; ++i) sizes.push_back(file_size(i));
  model::write_cp_a(path, model::numbered_tree("/src", sizes), "/src", "/dst");
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
