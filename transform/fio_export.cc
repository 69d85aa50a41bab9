#include "fio_export.h"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <climits>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <fmt/format.h>

#include "fd_map.h"

namespace fsrr::transform {
namespace {

// An empty directory to write into: made, or found empty.
result<void> empty_dir(const std::string& dir) {
  if (::mkdir(dir.c_str(), 0755) == 0) return {};
  if (errno != EEXIST) return failure("mkdir {}: {}", dir, std::strerror(errno));
  DIR* d = ::opendir(dir.c_str());
  if (!d) return failure("{}: {}", dir, std::strerror(errno));
  bool empty = true;
  while (const dirent* e = ::readdir(d))
    if (std::strcmp(e->d_name, ".") && std::strcmp(e->d_name, "..")) empty = false;
  ::closedir(d);
  if (!empty) return failure("{} is not empty: refusing to export into it", dir);
  return {};
}

result<void> write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::trunc);
  out << text;
  out.close();
  if (!out) return failure("cannot write {}", path);
  return {};
}

bool is_read(op k) {
  return k == op::read || k == op::pread64 || k == op::readv || k == op::preadv || k == op::preadv2;
}
bool is_write(op k) {
  return k == op::write || k == op::pwrite64 || k == op::writev || k == op::pwritev ||
         k == op::pwritev2;
}

// One recorded thread's iolog: each file added and opened where the thread first uses it.
struct job_log {
  int32_t tid = 0;
  std::string text = "fio version 3 iolog\n";
  std::vector<std::string> opened;  // in the order first used
  std::unordered_set<std::string> open;
  uint64_t last_us = 0;
  void use(const std::string& name, uint64_t us) {
    if (!open.insert(name).second) return;
    opened.push_back(name);
    text += fmt::format("{} {} add\n{} {} open\n", us, name, us, name);
  }
  void io(const std::string& name, uint64_t us, const char* what, uint64_t offset, uint64_t n) {
    use(name, us);
    last_us = std::max(last_us, us);
    text += fmt::format("{} {} {} {} {}\n", us, name, what, offset, n);
  }
  void sync(const std::string& name, uint64_t us, const char* what) {
    use(name, us);
    last_us = std::max(last_us, us);
    text += fmt::format("{} {} {} 0 0\n", us, name, what);
  }
  void close_all() {
    for (const auto& n : opened) text += fmt::format("{} {} close\n", last_us, n);
  }
};

}  // namespace

result<fio_export_result> export_fio(trace_reader& in, const std::string& dir_in) {
  std::string dir = dir_in;
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  FSRR_TRY(empty_dir(dir));
  char real[PATH_MAX];
  if (!::realpath(dir.c_str(), real)) return failure("{}: {}", dir, std::strerror(errno));
  dir = real;
  const std::string data = dir + "/data";
  if (::mkdir(data.c_str(), 0755) != 0) return failure("mkdir {}: {}", data, std::strerror(errno));

  // The initial sizes of the tree's files, by inode and by path.
  std::unordered_map<file_id, uint64_t> size_of_file;
  std::unordered_map<path_id, uint64_t> size_at_path;
  for (const tree_entry& t : in.tree()) {
    if (!S_ISREG(t.mode)) continue;
    if (t.file) size_of_file[t.file] = t.size;
    size_at_path[t.path] = t.size;
  }
  std::unordered_map<file_id, std::string> names;
  std::map<std::string, uint64_t> layout;  // name -> initial size
  fio_export_result r;
  const auto name_of = [&](file_id f, path_id at) -> const std::string& {
    auto [it, added] = names.try_emplace(f);
    if (added) {
      it->second = fmt::format("{}/f{}", data, names.size());
      uint64_t size = 0;
      if (auto s = size_of_file.find(f); s != size_of_file.end())
        size = s->second;
      else if (auto p = size_at_path.find(at); p != size_at_path.end())
        size = p->second;
      if (size) layout[it->second] = size;
    }
    return it->second;
  };

  std::vector<thread_info> threads(in.thread_count() + 1);
  for (thread_id t = 1; t < threads.size(); ++t) threads[t] = in.thread(t);
  fd_map fds(threads);
  std::map<thread_id, job_log> jobs;
  const uint64_t t0 = in.summary().first_ts;
  fd_effect fx;
  auto events = in.events();
  for (event e; events.next(e);) {
    fds.apply(e, fx);
    if (e.result < 0) continue;
    const uint64_t us = (e.ts - std::min(e.ts, t0)) / 1000;
    const uint64_t n = static_cast<uint64_t>(e.result);
    job_log& job = jobs[e.thread];
    job.tid = threads[e.thread < threads.size() ? e.thread : 0].tid;
    const auto path_of = [&](handle_id h) { return h ? fds.handle(h).path : no_id; };
    const auto regular = [&](file_id f) { return f && S_ISREG(in.file(f).type); };
    if ((e.kind == op::fsync || e.kind == op::fdatasync) && regular(e.file)) {
      job.sync(name_of(e.file, path_of(fx.h1)), us, e.kind == op::fsync ? "sync" : "datasync");
      ++r.syncs;
    } else if (n == 0) {
    } else if ((is_read(e.kind) || is_write(e.kind)) && regular(e.file)) {
      const bool rd = is_read(e.kind);
      job.io(name_of(e.file, path_of(fx.h1)), us, rd ? "read" : "write",
             static_cast<uint64_t>(e.offset), n);
      (rd ? r.reads : r.writes) += 1;
      (rd ? r.bytes_read : r.bytes_written) += n;
    } else if ((e.kind == op::copy_file_range || e.kind == op::sendfile) && regular(e.file) &&
               regular(e.file2)) {
      // copy_file_range: fd in, fd2 out; sendfile: fd out, fd2 in. -1: at (and past) the fd's
      // position, which fd_map has just moved past the bytes
      const bool cfr = e.kind == op::copy_file_range;
      const file_id src = cfr ? e.file : e.file2, dst = cfr ? e.file2 : e.file;
      const handle_id hs = cfr ? fx.h1 : fx.h2, hd = cfr ? fx.h2 : fx.h1;
      const bool src_pos = cfr ? fx.pos1 : fx.pos2, dst_pos = cfr ? fx.pos2 : true;
      const uint64_t from = src_pos ? (hs ? fds.handle(hs).pos - n : 0) : static_cast<uint64_t>(e.offset);
      const uint64_t to = dst_pos ? (hd ? fds.handle(hd).pos - n : 0)
                                  : static_cast<uint64_t>(cfr ? e.offset2 : e.offset);
      job.io(name_of(src, path_of(hs)), us, "read", from, n);
      job.io(name_of(dst, path_of(hd)), us, "write", to, n);
      ++r.reads, ++r.writes;
      r.bytes_read += n;
      r.bytes_written += n;
    }
    for (const handle_id h : fx.released) fds.recycle(h);
  }
  FSRR_TRY(events.status());
  std::string fio = fmt::format(
      "; fio jobs exported by fsrr from {} ({} events): one job per recorded thread, each\n"
      "; replaying its reads and writes from an iolog at their recorded times. The files are\n"
      "; {}/f1, f2, ...; `layout` writes the initial ones first. (No directory=: fio 3.33\n"
      "; crashes replaying an iolog with it set.)\n"
      "[global]\nioengine=psync\n\n",
      in.header().command.empty() ? std::string("a trace") : in.header().command.front(),
      in.summary().events, data);
  std::string log = "fio version 3 iolog\n";
  for (const auto& [name, size] : layout) {
    log += fmt::format("0 {} add\n0 {} open\n", name, name);
    for (uint64_t off = 0; off < size; off += 1 << 20)
      log += fmt::format("0 {} write {} {}\n", name, off, std::min<uint64_t>(1 << 20, size - off));
    log += fmt::format("0 {} close\n", name);
    r.layout_bytes += size;
  }
  FSRR_TRY(write_text(dir + "/layout.iolog", log));
  fio += fmt::format("[layout]\nread_iolog={}/layout.iolog\nreplay_no_stall=1\n\n", dir);
  bool first = true;
  std::map<std::string, int> taken;  // a tid the trace has twice (reused) gets a suffix
  for (auto& [t, job] : jobs) {
    if (job.opened.empty()) continue;
    job.close_all();
    std::string name = fmt::format("t{}", job.tid);
    if (const int k = taken[name]++) name += fmt::format(".{}", k);
    const std::string file = fmt::format("{}/{}.iolog", dir, name);
    FSRR_TRY(write_text(file, job.text));
    fio += fmt::format("[{}]\n{}read_iolog={}\n\n", name, first ? "stonewall\n" : "", file);
    first = false;
    ++r.jobs;
  }
  FSRR_TRY(write_text(dir + "/fsrr.fio", fio));
  r.files = names.size();
  return r;
}

}  // namespace fsrr::transform
