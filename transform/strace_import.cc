#include "strace_import.h"

#include <fcntl.h>
#include <linux/fs.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

#include "strace_importer.h"
#include "rewrite.h"
#include "trace_reader.h"
#include "trace_writer.h"

namespace fsrr::transform::strace {

void importer::line(std::string_view l) {
  ++r_.lines;
  int32_t pid = 0;
  if (l.substr(0, 5) == "[pid ") {
    l.remove_prefix(5);
    while (!l.empty() && l.front() == ' ') l.remove_prefix(1);
    pid = static_cast<int32_t>(number(l));
    l.remove_prefix(std::min(l.find(']') + 1, l.size()));
  } else if (!l.empty() && std::isdigit(static_cast<unsigned char>(l.front()))) {
    const size_t sp = l.find(' ');
    const std::string_view first = l.substr(0, sp);
    if (first.find('.') == std::string_view::npos) {  // a pid, not a timestamp
      pid = static_cast<int32_t>(number(first));
      l.remove_prefix(std::min(sp, l.size()));
    }
  }
  while (!l.empty() && l.front() == ' ') l.remove_prefix(1);
  if (!pid) pid = main_pid_ ? main_pid_ : 1;
  if (!main_pid_) main_pid_ = pid;
  uint64_t ts = last_ts_;
  {
    const size_t sp = l.find(' ');
    if (const auto t = timestamp(l.substr(0, sp))) {
      ts = *t;
      l.remove_prefix(std::min(sp + 1, l.size()));
    }
  }
  if (!first_ts_) first_ts_ = ts;
  last_ts_ = ts;
  if (l.substr(0, 3) == "+++") {
    if (l.find("exited") != std::string_view::npos || l.find("killed") != std::string_view::npos) {
      event e;
      e.kind = op::exit;
      e.result = l.find("exited with") != std::string_view::npos
                     ? number(l.substr(l.find("exited with") + 11))
                     : 128;
      put(pid, ts, 0, e);
    }
    return;
  }
  if (l.substr(0, 3) == "---") return;  // a signal
  std::string text(l);
  if (l.substr(0, 5) == "<... ") {  // the rest of an unfinished call
    const size_t close = l.find("resumed>");
    auto it = unfinished_.find(pid);
    if (close == std::string_view::npos || it == unfinished_.end()) return ++r_.unparsed, void();
    text = it->second.first + std::string(l.substr(close + 8));
    ts = it->second.second;
    unfinished_.erase(it);
  } else if (const size_t u = l.find(" <unfinished ...>"); u != std::string_view::npos) {
    unfinished_[pid] = {std::string(l.substr(0, u)), ts};
    return;
  }
  parse(pid, ts, text);
}

void importer::finish() {
  for (const auto& [path, f] : found_) {
    if (!f.existed) continue;
    tree_entry t;
    t.path = w_.intern_path(path);
    uint32_t type = f.mode & S_IFMT;
    if (!type) type = dirs_.count(path) ? S_IFDIR : S_IFREG;
    t.mode = type | (f.mode & 07777 ? f.mode & 07777 : S_ISDIR(type) ? 0755 : 0644);
    t.size = S_ISREG(type) ? f.size : 0;
    t.allocated = t.size;
    t.mtime_ns = t.atime_ns = t.ctime_ns = static_cast<int64_t>(first_ts_);
    if (S_ISLNK(type)) t.target = w_.intern_string(f.target);
    for (const auto& [name, size] : f.xattrs) t.xattrs.push_back({w_.intern_string(name), size});
    if (S_ISREG(type))
      if (const auto it = file_at_.find(path); it != file_at_.end()) t.file = it->second;
    w_.add_tree_entry(t);
    ++r_.tree;
  }
}

thread_state& importer::thread(int32_t pid) {
  thread_state& t = threads_[pid];
  if (!t.tgid) {  // a process the log did not see being made: the first one
    t.tgid = pid;
    t.table = ++tables_;
  }
  return t;
}

thread_id importer::id_of(int32_t pid) {
  thread_state& t = thread(pid);
  if (!t.id) {
    t.id = w_.add_thread({pid, t.tgid, t.ppid, w_.intern_string(t.comm), t.table, pid, t.tgid, 0});
    ++r_.threads;
  }
  return t.id;
}

void importer::put(int32_t pid, uint64_t ts, uint64_t dur, event& e) {
  e.thread = id_of(pid);
  e.ts = ts - std::min(ts, first_ts_);
  e.dur = dur;
  w_.append(e);
  ++r_.events;
}

void importer::nonfile(op k, obj o) {
  w_.add_nonfile(k, kind_of(o));
  ++r_.nonfile;
}

// A path as an absolute one: a name relative to a dirfd's annotation or the cwd.
std::string importer::absolute(int32_t pid, const fd_text& dir, const std::string& name) {
  if (!name.empty() && name.front() == '/') return normal(name);
  std::string base;
  if (!dir.what.empty() && dir.what.front() == '/') {
    base = dir.what;
    if (dir.at_fdcwd) thread(pid).cwd = dir.what;
  } else if (dir.at_fdcwd || dir.fd == AT_FDCWD) {
    base = thread(pid).cwd;
  } else if (const auto it = fds(pid).find(dir.fd); it != fds(pid).end()) {
    base = it->second.path;
  }
  if (!dir.what.empty()) r_.annotated = true;
  return normal((base.empty() ? std::string("/") : base) + "/" + name);
}

file_id importer::file_at(const std::string& path, uint32_t type) {
  auto [it, added] = file_at_.try_emplace(path, no_id);
  if (added) it->second = w_.intern_file({0, ++inodes_, 0, type});
  return it->second;
}

// The first the log says of a path: that it was there already, or not.
void importer::saw(const std::string& path, bool existed) {
  auto [it, added] = found_.try_emplace(path);
  if (!added) return;
  it->second.existed = existed;
  if (existed)  // and so were the directories on the way
    for (size_t slash = path.rfind('/'); slash != std::string::npos && slash > 0;
         slash = path.rfind('/', slash - 1)) {
      const std::string up = path.substr(0, slash);
      dirs_.insert(up);
      auto [d, fresh] = found_.try_emplace(up);
      if (fresh) d->second.existed = true;
    }
}

void importer::stat_of(const std::string& path, std::string_view st) {
  auto it = found_.find(path);
  if (it == found_.end() || !it->second.existed) return;
  if (it->second.mode == 0)
    if (const auto m = stat_mode(st)) it->second.mode = *m;
  if (!it->second.size_known)
    if (const auto s = stat_size(st)) it->second.size = *s, it->second.size_known = true;
}

void importer::extent_of(const std::string& path, uint64_t end) {
  auto it = found_.find(path);
  if (it != found_.end() && it->second.existed && !it->second.size_known)
    it->second.size = std::max(it->second.size, end);
}

open_file importer::classify(const std::string& what) {
  open_file f;
  if (what.empty()) return f;
  if (what.front() == '/') {
    if (what.substr(0, 8) == "/dev/pts" || what.substr(0, 8) == "/dev/tty") f.kind = obj::tty;
    else if (!pseudo(what)) f.kind = obj::storage, f.path = normal(what);
    return f;
  }
  const size_t lb = what.find(":[");
  const std::string_view id = lb == std::string::npos ? std::string_view{} : std::string_view(what).substr(lb + 2);
  if (what.substr(0, 5) == "pipe:") {
    f.kind = obj::pipe;
    f.stream_in = f.stream_out = w_.intern_file({~uint64_t{1}, static_cast<uint64_t>(number(id)), 0, S_IFIFO});
  } else if (what.substr(0, 4) == "UNIX") {  // -yy: "UNIX-STREAM:[61839->61840]"
    f.kind = obj::socket;
    const size_t arrow = id.find("->");
    if (arrow != std::string_view::npos) {
      f.stream_out = w_.intern_file({~uint64_t{0}, static_cast<uint64_t>(number(id)), 0, S_IFSOCK});
      f.stream_in = w_.intern_file({~uint64_t{0}, static_cast<uint64_t>(number(id.substr(arrow + 2))), 0, S_IFSOCK});
    }
  } else if (what.find("socket") != std::string::npos || what.find("TCP") != std::string::npos ||
             what.find("UDP") != std::string::npos) {
    f.kind = obj::socket;
  }
  return f;
}

// The file an fd argument names: the table's entry, or what its annotation says.
open_file& importer::file_of(int32_t pid, const fd_text& f) {
  auto& table = fds(pid);
  auto it = table.find(f.fd);
  if (it == table.end() || (!f.what.empty() && (it->second.kind == obj::storage) != (!f.what.empty() && f.what.front() == '/' && !pseudo(f.what)))) {
    open_file o = classify(f.what);
    if (o.kind == obj::storage) {
      o.file = file_at(o.path);
      saw(o.path, true);
      // a file the process had before the log began (inherited): found open, as the
      // recorder says of such fds
      event b;
      b.kind = op::fd_bind;
      b.fd = static_cast<int32_t>(f.fd);
      b.file = o.file;
      b.path = w_.intern_path(o.path);
      b.flags = O_RDWR;
      put(pid, last_ts_, 0, b);
    }
    it = table.insert_or_assign(f.fd, o).first;
  }
  if (!f.what.empty()) r_.annotated = true;
  return it->second;
}

void importer::parse(int32_t pid, uint64_t ts, std::string_view text) {
  call c;
  c.pid = pid;
  c.ts = ts;
  const size_t paren = text.find('(');
  if (paren == std::string_view::npos) return ++r_.unparsed, void();
  c.name = std::string(text.substr(0, paren));
  // the arguments end at the ") = " of the result; a string argument may hold ") = " too,
  // so the last one
  // the last "= " after a ')' (strace pads short calls: "brk(NULL)       = 0x...")
  size_t eq = text.rfind("= ");
  size_t close = eq;
  while (eq != std::string_view::npos) {
    close = text.find_last_not_of(' ', eq ? eq - 1 : 0);
    if (close != std::string_view::npos && text[close] == ')' && close > paren) break;
    eq = eq ? text.rfind("= ", eq - 1) : std::string_view::npos;
  }
  if (eq == std::string_view::npos) return ++r_.unparsed, void();
  c.args = split_args(text.substr(paren + 1, close - paren - 1));
  std::string_view rest = text.substr(eq + 2);
  if (const size_t lt = rest.rfind(" <"); lt != std::string_view::npos && rest.back() == '>') {
    if (const auto d = timestamp(rest.substr(lt + 2, rest.size() - lt - 3))) c.dur = *d;
    rest = rest.substr(0, lt);
  }
  c.result = std::string(rest);
  const auto kind = op_from_name(c.name);
  if (!kind) {
    if (c.name == "newfstat") return;  // never mind
    ++r_.not_ops;
    return;
  }
  handle(*kind, c);
}

// "3</a/b>", "-1 ENOENT (...)", "0x7f00": the result as the recorder has it.
int64_t importer::result_of(const call& c) const {
  std::string_view r = c.result;
  if (r.empty() || r.front() == '?') return 0;
  if (r.substr(0, 2) == "-1" && r.size() > 3 && std::isupper(static_cast<unsigned char>(r[3]))) {
    const std::string_view name = r.substr(3, r.find(' ', 3) - 3);
    return -errno_of(name);
  }
  return number(r.substr(0, r.find_first_of(" <")));
}

std::string importer::result_annotation(const call& c) const {
  const size_t lt = c.result.find('<');
  if (lt == std::string::npos || c.result.back() != '>') return {};
  return unescape(std::string_view(c.result).substr(lt + 1, c.result.size() - lt - 2));
}

}  // namespace fsrr::transform::strace

namespace fsrr::transform {

namespace {

// The scratch trace's events, copied into `out` under the complete header.
result<void> copy_scratch(const std::string& scratch, const std::string& out, const header_info& h,
                          bool force) {
  auto tmp = trace_reader::open(scratch);
  if (!tmp) return tl::unexpected(tmp.error());
  auto copy = trace_rewriter::create(*tmp, out, h, force);
  if (!copy) return tl::unexpected(copy.error());
  for (const tree_entry& t : tmp->tree()) copy->add_tree_entry(t);
  auto events = tmp->events();
  for (event e; events.next(e);) copy->append(e);
  FSRR_TRY(events.status());
  copy->copy_counters();
  return copy->finish();
}

}  // namespace

result<strace_import_result> import_strace(const std::string& log, const std::string& out,
                                           bool force) {
  std::ifstream in(log);
  if (!in) return failure("{}: {}", log, std::strerror(errno));
  header_info h;
  h.writer = "fsrr " FSRR_VERSION;
  h.kind = trace_kind::recording;
  h.derived = "import strace";
  // The header goes first; its command line is only known once the log has been read: the
  // events go to a scratch trace, then into the output with the header complete.
  strace_import_result r;
  const std::string scratch = out + ".importing";
  std::vector<std::string> command;
  {
    auto w = trace_writer::create(scratch, h);  // an existing file of that name stays
    if (!w) return tl::unexpected(w.error());
    strace::importer imp(*w, r);
    for (std::string line; std::getline(in, line);) imp.line(line);
    imp.finish();
    if (auto written = w->finish(); !written) {
      ::unlink(scratch.c_str());
      return tl::unexpected(written.error());
    }
    command = imp.command;
    h.clock_realtime_ns = static_cast<int64_t>(imp.first_ts());
  }
  h.command = command;
  const auto copied = copy_scratch(scratch, out, h, force);
  ::unlink(scratch.c_str());
  if (!copied) return tl::unexpected(copied.error());
  return r;
}

}  // namespace fsrr::transform
