#include "strace_import.h"

#include <fcntl.h>
#include <linux/fs.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

#include "ops.h"
#include "rewrite.h"
#include "trace_reader.h"
#include "trace_writer.h"

namespace fsrr::transform {
namespace {

// ---- the text of a log line ---------------------------------------------------------------

struct call {
  int32_t pid = 0;
  uint64_t ts = 0;  // ns since the epoch
  std::string name;
  std::vector<std::string> args;
  std::string result;  // after "= ", before the duration
  uint64_t dur = 0;
};

// Splits the arguments of a call at the commas outside strings, brackets, braces and the
// <...> annotations of -y.
std::vector<std::string> split_args(std::string_view s) {
  std::vector<std::string> out;
  std::string cur;
  int depth = 0;
  bool quoted = false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (quoted) {
      cur += c;
      if (c == '\\' && i + 1 < s.size()) cur += s[++i];
      else if (c == '"') quoted = false;
      continue;
    }
    if (c == '"') quoted = true;
    if (c == '[' || c == '{' || c == '(') ++depth;
    if (c == ']' || c == '}' || c == ')') --depth;
    if (c == '<' && i > 0 && (std::isalnum(static_cast<unsigned char>(s[i - 1])) || s[i - 1] == ']'))
      ++depth;
    if (c == '>' && depth > 0 && !cur.empty() && cur.find('<') != std::string::npos) --depth;
    if (c == ',' && depth == 0) {
      out.push_back(cur);
      cur.clear();
      while (i + 1 < s.size() && s[i + 1] == ' ') ++i;
      continue;
    }
    cur += c;
  }
  if (!cur.empty() || !out.empty()) out.push_back(cur);
  return out;
}

// "1700000000.123456" -> ns
std::optional<uint64_t> timestamp(std::string_view t) {
  const size_t dot = t.find('.');
  if (dot == std::string_view::npos || dot == 0) return std::nullopt;
  uint64_t s = 0, frac = 0;
  for (char c : t.substr(0, dot)) {
    if (c < '0' || c > '9') return std::nullopt;
    s = s * 10 + static_cast<uint64_t>(c - '0');
  }
  size_t digits = 0;
  for (char c : t.substr(dot + 1)) {
    if (c < '0' || c > '9') return std::nullopt;
    if (digits++ < 9) frac = frac * 10 + static_cast<uint64_t>(c - '0');
  }
  for (; digits < 9; ++digits) frac *= 10;
  return s * 1'000'000'000 + frac;
}

// strace's C escapes undone.
std::string unescape(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\\' || i + 1 >= s.size()) {
      out += s[i];
      continue;
    }
    const char c = s[++i];
    switch (c) {
      case 'n': out += '\n'; break;
      case 't': out += '\t'; break;
      case 'r': out += '\r'; break;
      case 'v': out += '\v'; break;
      case 'f': out += '\f'; break;
      case 'x': {
        int v = 0;
        for (int k = 0; k < 2 && i + 1 < s.size() && std::isxdigit(static_cast<unsigned char>(s[i + 1])); ++k) {
          const char h = s[++i];
          v = v * 16 + (std::isdigit(static_cast<unsigned char>(h)) ? h - '0' : (h | 32) - 'a' + 10);
        }
        out += static_cast<char>(v);
        break;
      }
      default:
        if (c >= '0' && c <= '7') {
          int v = c - '0';
          for (int k = 1; k < 3 && i + 1 < s.size() && s[i + 1] >= '0' && s[i + 1] <= '7'; ++k)
            v = v * 8 + (s[++i] - '0');
          out += static_cast<char>(v);
        } else {
          out += c;
        }
    }
  }
  return out;
}

// The string a quoted argument stands for.
std::string unquote(std::string_view s) {
  const size_t a = s.find('"');
  if (a == std::string_view::npos) return std::string(s);
  size_t b = a + 1;
  while (b < s.size() && s[b] != '"') b += s[b] == '\\' ? 2 : 1;
  return unescape(s.substr(a + 1, std::min(b, s.size()) - a - 1));
}

int64_t number(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  bool neg = false;
  if (!s.empty() && s.front() == '-') neg = true, s.remove_prefix(1);
  int64_t v = 0;
  if (s.substr(0, 2) == "0x") {
    for (char c : s.substr(2)) {
      if (!std::isxdigit(static_cast<unsigned char>(c))) break;
      v = v * 16 + (std::isdigit(static_cast<unsigned char>(c)) ? c - '0' : (c | 32) - 'a' + 10);
    }
  } else if (s.size() > 1 && s.front() == '0') {
    for (char c : s.substr(1)) {
      if (c < '0' || c > '7') break;
      v = v * 8 + (c - '0');
    }
  } else {
    for (char c : s) {
      if (c < '0' || c > '9') break;
      v = v * 10 + (c - '0');
    }
  }
  return neg ? -v : v;
}

// "O_RDONLY|O_CLOEXEC", "AT_SYMLINK_NOFOLLOW", "0x100": the bits of the names this table has.
uint64_t bits(std::string_view s, const std::map<std::string_view, uint64_t>& names) {
  uint64_t v = 0;
  size_t pos = 0;
  while (pos <= s.size()) {
    size_t bar = s.find('|', pos);
    if (bar == std::string_view::npos) bar = s.size();
    const std::string_view w = s.substr(pos, bar - pos);
    if (const auto it = names.find(w); it != names.end())
      v |= it->second;
    else if (!w.empty() && (std::isdigit(static_cast<unsigned char>(w[0])) || w[0] == '-'))
      v |= static_cast<uint64_t>(number(w));
    pos = bar + 1;
  }
  return v;
}

const std::map<std::string_view, uint64_t> open_flags = {
    {"O_RDONLY", O_RDONLY}, {"O_WRONLY", O_WRONLY}, {"O_RDWR", O_RDWR}, {"O_CREAT", O_CREAT},
    {"O_EXCL", O_EXCL}, {"O_NOCTTY", O_NOCTTY}, {"O_TRUNC", O_TRUNC}, {"O_APPEND", O_APPEND},
    {"O_NONBLOCK", O_NONBLOCK}, {"O_DSYNC", O_DSYNC}, {"O_DIRECT", O_DIRECT},
    {"O_LARGEFILE", O_LARGEFILE}, {"O_DIRECTORY", O_DIRECTORY}, {"O_NOFOLLOW", O_NOFOLLOW},
    {"O_NOATIME", O_NOATIME}, {"O_CLOEXEC", O_CLOEXEC}, {"O_SYNC", O_SYNC}, {"O_PATH", O_PATH},
    {"O_TMPFILE", O_TMPFILE}};
const std::map<std::string_view, uint64_t> at_flags = {
    {"AT_SYMLINK_NOFOLLOW", 0x100}, {"AT_REMOVEDIR", 0x200}, {"AT_SYMLINK_FOLLOW", 0x400},
    {"AT_NO_AUTOMOUNT", 0x800}, {"AT_EMPTY_PATH", 0x1000}, {"AT_EACCESS", 0x200},
    {"AT_STATX_SYNC_AS_STAT", 0}, {"RENAME_NOREPLACE", 1}, {"RENAME_EXCHANGE", 2},
    {"RENAME_WHITEOUT", 4}};
const std::map<std::string_view, uint64_t> clone_flags = {
    {"CLONE_VM", CLONE_VM}, {"CLONE_FS", CLONE_FS}, {"CLONE_FILES", CLONE_FILES},
    {"CLONE_SIGHAND", CLONE_SIGHAND}, {"CLONE_THREAD", CLONE_THREAD}, {"CLONE_VFORK", CLONE_VFORK},
    {"CLONE_SYSVSEM", CLONE_SYSVSEM}, {"CLONE_SETTLS", CLONE_SETTLS},
    {"CLONE_PARENT_SETTID", CLONE_PARENT_SETTID}, {"CLONE_CHILD_CLEARTID", CLONE_CHILD_CLEARTID},
    {"CLONE_CHILD_SETTID", CLONE_CHILD_SETTID}, {"CLONE_PIDFD", CLONE_PIDFD}};
const std::map<std::string_view, uint64_t> map_flags = {
    {"MAP_SHARED", MAP_SHARED}, {"MAP_PRIVATE", MAP_PRIVATE}, {"MAP_FIXED", MAP_FIXED},
    {"MAP_ANONYMOUS", MAP_ANONYMOUS}, {"MAP_DENYWRITE", MAP_DENYWRITE},
    {"MAP_NORESERVE", MAP_NORESERVE}, {"MAP_POPULATE", MAP_POPULATE}, {"MAP_STACK", MAP_STACK}};
const std::map<std::string_view, uint64_t> prot_flags = {
    {"PROT_NONE", 0}, {"PROT_READ", PROT_READ}, {"PROT_WRITE", PROT_WRITE}, {"PROT_EXEC", PROT_EXEC}};

int errno_of(std::string_view name) {
  static const std::unordered_map<std::string, int> table = [] {
    std::unordered_map<std::string, int> t;
    for (int e = 1; e < 256; ++e)
      if (const char* n = strerrorname_np(e)) t.emplace(n, e);
    return t;
  }();
  const auto it = table.find(std::string(name));
  return it == table.end() ? EIO : it->second;
}

// A -y annotated fd or dirfd: "3</dev/shm/a>", "AT_FDCWD</home>", "5<pipe:[1234]>".
struct fd_text {
  int64_t fd = -1;
  bool at_fdcwd = false;
  std::string what;  // the annotation; "" without -y
};
fd_text fd_arg(std::string_view s) {
  fd_text f;
  const size_t lt = s.find('<');
  const std::string_view head = s.substr(0, lt);
  if (head == "AT_FDCWD") f.at_fdcwd = true, f.fd = AT_FDCWD;
  else f.fd = number(head);
  if (lt != std::string_view::npos && s.back() == '>') f.what = unescape(s.substr(lt + 1, s.size() - lt - 2));
  return f;
}


// "st_mode=S_IFREG|0644" or "stx_mode=..." in a stat struct: type and permission bits.
std::optional<uint32_t> stat_mode(std::string_view st) {
  size_t at = st.find("st_mode=");
  size_t skip = 8;
  if (at == std::string_view::npos) at = st.find("stx_mode="), skip = 9;
  if (at == std::string_view::npos) return std::nullopt;
  std::string_view v = st.substr(at + skip);
  v = v.substr(0, v.find_first_of(",}"));
  static const std::map<std::string_view, uint64_t> types = {
      {"S_IFREG", S_IFREG}, {"S_IFDIR", S_IFDIR}, {"S_IFLNK", S_IFLNK}, {"S_IFIFO", S_IFIFO},
      {"S_IFSOCK", S_IFSOCK}, {"S_IFCHR", S_IFCHR}, {"S_IFBLK", S_IFBLK},
      {"S_ISUID", S_ISUID}, {"S_ISGID", S_ISGID}, {"S_ISVTX", S_ISVTX}};
  return static_cast<uint32_t>(bits(v, types));
}

std::optional<uint64_t> stat_size(std::string_view st) {
  size_t at = st.find("st_size=");
  size_t skip = 8;
  if (at == std::string_view::npos) at = st.find("stx_size="), skip = 9;
  if (at == std::string_view::npos) return std::nullopt;
  return static_cast<uint64_t>(number(st.substr(at + skip)));
}

// The sum of the iov_len of "[{iov_base=..., iov_len=10}, ...]".
uint64_t iov_bytes(std::string_view v) {
  uint64_t n = 0;
  for (size_t at = v.find("iov_len="); at != std::string_view::npos; at = v.find("iov_len=", at + 8))
    n += static_cast<uint64_t>(number(v.substr(at + 8)));
  return n;
}

// "[100 => 200]", "[100]", "NULL": the offset a pointer held before the call, -1 for NULL.
int64_t pointed(std::string_view v) {
  if (v.find('[') == std::string_view::npos) return -1;
  return number(v.substr(v.find('[') + 1));
}

// "/a/./b/../c" -> "/a/c" (lexically: the kernel followed what links there were). A path
// ends at its first NUL, as the kernel reads it (a log's "\0" is no name's part).
std::string normal(std::string_view p) {
  p = p.substr(0, p.find('\0'));
  std::vector<std::string_view> parts;
  size_t pos = 0;
  while (pos <= p.size()) {
    size_t slash = p.find('/', pos);
    if (slash == std::string_view::npos) slash = p.size();
    const std::string_view c = p.substr(pos, slash - pos);
    if (c == "..") {
      if (!parts.empty()) parts.pop_back();
    } else if (!c.empty() && c != ".") {
      parts.push_back(c);
    }
    pos = slash + 1;
  }
  std::string out;
  for (auto c : parts) out.append("/").append(c);
  return out.empty() ? "/" : out;
}

bool pseudo(std::string_view p) {
  const auto under = [&](std::string_view d) {
    return p.substr(0, d.size()) == d && (p.size() == d.size() || p[d.size()] == '/');
  };
  return (under("/dev") && !under("/dev/shm")) || under("/proc") || under("/sys");
}

enum class obj : uint8_t { storage, pipe, socket, tty, other };

fd_kind kind_of(obj o) {
  switch (o) {
    case obj::pipe: return fd_kind::pipe;
    case obj::socket: return fd_kind::socket;
    case obj::tty: return fd_kind::tty;
    default: return fd_kind::other;
  }
}

struct open_file {
  obj kind = obj::other;
  std::string path;
  file_id file = no_id;
  file_id stream_out = no_id, stream_in = no_id;
  int64_t pos = 0;
  bool append = false;
  bool cloexec = false;
};

struct thread_state {
  thread_id id = no_id;
  int32_t tgid = 0, ppid = 0;
  uint32_t table = 0;
  std::string comm;
  std::string cwd;
};

// What the log shows of a path the program found: the initial tree's entry for it.
struct found {
  std::map<std::string, uint32_t> xattrs;  // names a listxattr showed, sizes a getxattr did
  bool existed = false;
  uint32_t mode = 0;  // type and bits, where a stat showed them
  uint64_t size = 0;
  bool size_known = false;
  std::string target;  // a symlink's, from readlink
};

class importer {
 public:
  importer(trace_writer& w, strace_import_result& r) : w_(w), r_(r) {}

  void line(std::string_view l) {
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

  void finish() {
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

  std::vector<std::string> command;
  uint64_t first_ts() const { return first_ts_; }

 private:
  // ---- what the processes have ----
  thread_state& thread(int32_t pid) {
    thread_state& t = threads_[pid];
    if (!t.tgid) {  // a process the log did not see being made: the first one
      t.tgid = pid;
      t.table = ++tables_;
    }
    return t;
  }
  thread_id id_of(int32_t pid) {
    thread_state& t = thread(pid);
    if (!t.id) {
      t.id = w_.add_thread({pid, t.tgid, t.ppid, w_.intern_string(t.comm), t.table, pid, t.tgid, 0});
      ++r_.threads;
    }
    return t.id;
  }
  std::map<int64_t, open_file>& fds(int32_t pid) { return tables_fds_[thread(pid).table]; }

  void put(int32_t pid, uint64_t ts, uint64_t dur, event& e) {
    e.thread = id_of(pid);
    e.ts = ts - std::min(ts, first_ts_);
    e.dur = dur;
    w_.append(e);
    ++r_.events;
  }
  void nonfile(op k, obj o) {
    w_.add_nonfile(k, kind_of(o));
    ++r_.nonfile;
  }

  // A path as an absolute one: a name relative to a dirfd's annotation or the cwd.
  std::string absolute(int32_t pid, const fd_text& dir, const std::string& name) {
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

  file_id file_at(const std::string& path, uint32_t type = S_IFREG) {
    auto [it, added] = file_at_.try_emplace(path, no_id);
    if (added) it->second = w_.intern_file({0, ++inodes_, 0, type});
    return it->second;
  }

  // The first the log says of a path: that it was there already, or not.
  void saw(const std::string& path, bool existed) {
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
  void stat_of(const std::string& path, std::string_view st) {
    auto it = found_.find(path);
    if (it == found_.end() || !it->second.existed) return;
    if (it->second.mode == 0)
      if (const auto m = stat_mode(st)) it->second.mode = *m;
    if (!it->second.size_known)
      if (const auto s = stat_size(st)) it->second.size = *s, it->second.size_known = true;
  }
  void extent_of(const std::string& path, uint64_t end) {
    auto it = found_.find(path);
    if (it != found_.end() && it->second.existed && !it->second.size_known)
      it->second.size = std::max(it->second.size, end);
  }

  open_file classify(const std::string& what) {
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
  open_file& file_of(int32_t pid, const fd_text& f) {
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

  std::string arg(const call& c, size_t i) const { return i < c.args.size() ? c.args[i] : std::string(); }

  void parse(int32_t pid, uint64_t ts, std::string_view text) {
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
  int64_t result_of(const call& c) const {
    std::string_view r = c.result;
    if (r.empty() || r.front() == '?') return 0;
    if (r.substr(0, 2) == "-1" && r.size() > 3 && std::isupper(static_cast<unsigned char>(r[3]))) {
      const std::string_view name = r.substr(3, r.find(' ', 3) - 3);
      return -errno_of(name);
    }
    return number(r.substr(0, r.find_first_of(" <")));
  }
  std::string result_annotation(const call& c) const {
    const size_t lt = c.result.find('<');
    if (lt == std::string::npos || c.result.back() != '>') return {};
    return unescape(std::string_view(c.result).substr(lt + 1, c.result.size() - lt - 2));
  }

  void handle(op k, const call& c);

  trace_writer& w_;
  strace_import_result& r_;
  int32_t main_pid_ = 0;
  uint64_t first_ts_ = 0, last_ts_ = 0;
  std::unordered_map<int32_t, std::pair<std::string, uint64_t>> unfinished_;
  std::unordered_map<int32_t, thread_state> threads_;
  std::unordered_map<uint32_t, std::map<int64_t, open_file>> tables_fds_;
  uint32_t tables_ = 0;
  std::map<std::string, found> found_;
  std::set<std::string> dirs_;
  std::unordered_map<std::string, file_id> file_at_;
  uint64_t inodes_ = 0;
  std::unordered_map<std::string, uint64_t> sizes_;  // the sizes writes gave files
};


// One call of an op fsrr knows, as the recorder would have it.
void importer::handle(op k, const call& c) {
  const int32_t pid = c.pid;
  const int64_t res = result_of(c);
  const uint64_t moved = res > 0 ? static_cast<uint64_t>(res) : 0;
  event e;
  e.kind = k;
  e.result = res;
  const auto emit = [&] { put(pid, c.ts, c.dur, e); };
  const auto at = [&](size_t dir, size_t name) {  // a (dirfd,) name argument pair, absolute
    fd_text d;
    if (dir == SIZE_MAX)
      d.at_fdcwd = true, d.fd = AT_FDCWD;
    else
      d = fd_arg(arg(c, dir));
    return absolute(pid, d, unquote(arg(c, name)));
  };
  const auto on_path = [&](const std::string& path, bool existed_if_ok) -> bool {
    if (pseudo(path)) {
      nonfile(k, obj::other);
      return false;
    }
    e.path = w_.intern_path(path);
    if (res >= 0 || res == -EEXIST) saw(path, existed_if_ok || res == -EEXIST);
    else if (res == -ENOENT) saw(path, false);
    if (const auto it = file_at_.find(path); it != file_at_.end()) e.file = it->second;
    return true;
  };
  // An fd argument: the event names its file, or the call is counted as a non-file op.
  const auto on_fd = [&](size_t i, bool second = false) -> open_file* {
    const fd_text f = fd_arg(arg(c, i));
    open_file& o = file_of(pid, f);
    if (o.kind != obj::storage) return nullptr;
    (second ? e.fd2 : e.fd) = static_cast<int32_t>(f.fd);
    (second ? e.file2 : e.file) = o.file;
    return &o;
  };
  const op_class cls = info(k).cls;

  switch (cls) {
    case op_class::open: {
      const bool dirfd = k == op::openat || k == op::openat2;
      std::string path = at(dirfd ? 0 : SIZE_MAX, dirfd ? 1 : 0);
      uint64_t flags = 0;
      if (k == op::creat) {
        flags = O_CREAT | O_WRONLY | O_TRUNC;
        e.mode = static_cast<uint32_t>(number(arg(c, 1)));
      } else if (k == op::openat2) {
        const std::string how = arg(c, 2);
        const size_t f = how.find("flags="), m = how.find("mode=");
        if (f != std::string::npos) flags = bits(std::string_view(how).substr(f + 6, how.find_first_of(",}", f) - f - 6), open_flags);
        if (m != std::string::npos) e.mode = static_cast<uint32_t>(number(std::string_view(how).substr(m + 5)));
      } else {
        flags = bits(arg(c, dirfd ? 2 : 1), open_flags);
        e.mode = static_cast<uint32_t>(number(arg(c, dirfd ? 3 : 2)));
      }
      if (k != op::creat) e.flags = static_cast<uint32_t>(flags);
      if (res < 0) {
        if (res == -ENXIO || res == -ENODEV) return nonfile(k, obj::other);
        if (on_path(path, true)) emit();
        return;
      }
      const std::string shown = result_annotation(c);
      open_file o = shown.empty() ? open_file{obj::storage, path} : classify(shown);
      o.append = flags & O_APPEND;
      o.cloexec = flags & O_CLOEXEC;
      if (o.kind != obj::storage) {
        fds(pid).insert_or_assign(res, o);
        return nonfile(k, o.kind);
      }
      path = o.path;
      const bool first = !found_.count(path);
      saw(path, !(first && (flags & O_CREAT)));
      if (flags & O_DIRECTORY) dirs_.insert(path);
      if (flags & O_TRUNC) sizes_[path] = 0;
      o.file = file_at(path, flags & O_DIRECTORY ? S_IFDIR : S_IFREG);
      e.path = w_.intern_path(path);
      e.file = o.file;
      fds(pid).insert_or_assign(res, o);
      return emit();
    }
    default:
      break;
  }

  switch (k) {
    case op::close: {
      const fd_text f = fd_arg(arg(c, 0));
      open_file* o = on_fd(0);
      if (o) emit();
      else nonfile(k, file_of(pid, f).kind);
      if (res != -EBADF) fds(pid).erase(f.fd);
      return;
    }
    case op::read: case op::pread64: case op::readv: case op::preadv: case op::preadv2:
    case op::write: case op::pwrite64: case op::writev: case op::pwritev: case op::pwritev2: {
      const bool vec = k == op::readv || k == op::preadv || k == op::preadv2 || k == op::writev ||
                       k == op::pwritev || k == op::pwritev2;
      const bool positioned = k == op::pread64 || k == op::pwrite64 || k == op::preadv ||
                              k == op::pwritev || k == op::preadv2 || k == op::pwritev2;
      const bool out = cls == op_class::write;
      const fd_text f = fd_arg(arg(c, 0));
      open_file& o = file_of(pid, f);
      e.size = vec ? iov_bytes(arg(c, 1)) : static_cast<uint64_t>(number(arg(c, 2)));
      if (vec) e.aux = static_cast<uint64_t>(number(arg(c, 2)));
      if (o.kind != obj::storage) {
        nonfile(k, o.kind);
        const file_id stream = out ? o.stream_out : o.stream_in;
        if (moved && stream) {
          event s;
          s.kind = out ? op::stream_write : op::stream_read;
          s.result = res;
          s.fd = static_cast<int32_t>(f.fd);
          s.file = stream;
          s.size = e.size;
          s.aux = static_cast<uint64_t>(k);
          put(pid, c.ts, c.dur, s);
        }
        return;
      }
      e.fd = static_cast<int32_t>(f.fd);
      e.file = o.file;
      int64_t off = positioned ? number(arg(c, 3)) : -1;
      if (off < 0) off = out && o.append ? static_cast<int64_t>(sizes_[o.path]) : o.pos;
      e.offset = off;
      if (k == op::preadv2 || k == op::pwritev2) e.flags = static_cast<uint32_t>(number(arg(c, 4)));
      if (!positioned || number(arg(c, 3)) < 0) o.pos = off + static_cast<int64_t>(moved);
      if (out) {
        uint64_t& size = sizes_[o.path];
        size = std::max(size, static_cast<uint64_t>(off) + moved);
      } else {
        extent_of(o.path, static_cast<uint64_t>(off) + moved);
      }
      return emit();
    }
    case op::lseek: {
      open_file* o = on_fd(0);
      if (!o) return nonfile(k, file_of(pid, fd_arg(arg(c, 0))).kind);
      e.offset = number(arg(c, 1));
      static const std::map<std::string_view, uint64_t> whence = {
          {"SEEK_SET", 0}, {"SEEK_CUR", 1}, {"SEEK_END", 2}, {"SEEK_DATA", 3}, {"SEEK_HOLE", 4}};
      e.aux = bits(arg(c, 2), whence);
      if (res >= 0) o->pos = res;
      return emit();
    }
    case op::copy_file_range: case op::sendfile: case op::splice: {
      const bool sf = k == op::sendfile;
      open_file* a = on_fd(0);
      open_file* b = on_fd(sf ? 1 : 2, true);
      if (!a && !b) return nonfile(k, file_of(pid, fd_arg(arg(c, 0))).kind);
      if (sf) {
        e.offset = pointed(arg(c, 2));
        e.size = static_cast<uint64_t>(number(arg(c, 3)));
        if (a) a->pos += static_cast<int64_t>(moved);
        if (b && e.offset < 0) b->pos += static_cast<int64_t>(moved);
      } else {
        e.offset = pointed(arg(c, 1));
        e.offset2 = pointed(arg(c, 3));
        e.size = static_cast<uint64_t>(number(arg(c, 4)));
        e.flags = static_cast<uint32_t>(bits(arg(c, 5), {}));
        if (a && e.offset < 0) a->pos += static_cast<int64_t>(moved);
        if (b && e.offset2 < 0) b->pos += static_cast<int64_t>(moved);
      }
      return emit();
    }
    case op::ioctl: {
      open_file* o = on_fd(0);
      if (!o) return nonfile(k, file_of(pid, fd_arg(arg(c, 0))).kind);
      const std::string cmd = arg(c, 1);
      if (cmd.find("FICLONERANGE") != std::string::npos) {
        e.aux = FICLONERANGE;
        const std::string r = arg(c, 2);
        const auto field = [&](const char* name) {
          const size_t p = r.find(name);
          return p == std::string::npos ? int64_t{0} : number(std::string_view(r).substr(p + std::strlen(name)));
        };
        const int64_t src = field("src_fd=");
        if (auto it = fds(pid).find(src); it != fds(pid).end() && it->second.kind == obj::storage)
          e.fd2 = static_cast<int32_t>(src), e.file2 = it->second.file;
        e.offset = field("src_offset=");
        e.size = static_cast<uint64_t>(field("src_length="));
        e.offset2 = field("dest_offset=");
      } else if (cmd.find("FICLONE") != std::string::npos) {
        e.aux = FICLONE;
        on_fd(2, true);
      } else {
        e.aux = static_cast<uint64_t>(number(cmd));
      }
      return emit();
    }
    case op::fadvise64: case op::readahead: {
      if (!on_fd(0)) return nonfile(k, file_of(pid, fd_arg(arg(c, 0))).kind);
      e.offset = number(arg(c, 1));
      e.size = static_cast<uint64_t>(number(arg(c, 2)));
      static const std::map<std::string_view, uint64_t> advice = {
          {"POSIX_FADV_NORMAL", 0}, {"POSIX_FADV_RANDOM", 1}, {"POSIX_FADV_SEQUENTIAL", 2},
          {"POSIX_FADV_WILLNEED", 3}, {"POSIX_FADV_DONTNEED", 4}, {"POSIX_FADV_NOREUSE", 5}};
      if (k == op::fadvise64) e.flags = static_cast<uint32_t>(bits(arg(c, 3), advice));
      return emit();
    }
    case op::getdents: case op::getdents64: {
      open_file* o = on_fd(0);
      if (!o) return nonfile(k, file_of(pid, fd_arg(arg(c, 0))).kind);
      dirs_.insert(o->path);
      e.size = static_cast<uint64_t>(number(arg(c, 2)));
      return emit();
    }
    case op::ftruncate: case op::fallocate: case op::sync_file_range: {
      open_file* o = on_fd(0);
      if (!o) return nonfile(k, file_of(pid, fd_arg(arg(c, 0))).kind);
      if (k == op::ftruncate) {
        e.size = static_cast<uint64_t>(number(arg(c, 1)));
        if (res == 0) sizes_[o->path] = e.size;
      } else if (k == op::fallocate) {
        static const std::map<std::string_view, uint64_t> modes = {
            {"FALLOC_FL_KEEP_SIZE", 1}, {"FALLOC_FL_PUNCH_HOLE", 2}, {"FALLOC_FL_COLLAPSE_RANGE", 8},
            {"FALLOC_FL_ZERO_RANGE", 0x10}, {"FALLOC_FL_INSERT_RANGE", 0x20}, {"FALLOC_FL_UNSHARE_RANGE", 0x40}};
        e.flags = static_cast<uint32_t>(bits(arg(c, 1), modes));
        e.offset = number(arg(c, 2));
        e.size = static_cast<uint64_t>(number(arg(c, 3)));
      } else {
        e.offset = number(arg(c, 1));
        e.size = static_cast<uint64_t>(number(arg(c, 2)));
      }
      return emit();
    }
    case op::truncate:
      if (!on_path(at(SIZE_MAX, 0), true)) return;
      e.size = static_cast<uint64_t>(number(arg(c, 1)));
      return emit();
    case op::mkdir: case op::mkdirat: case op::mknod: case op::mknodat: {
      const bool d = k == op::mkdirat || k == op::mknodat;
      const std::string path = at(d ? 0 : SIZE_MAX, d ? 1 : 0);
      if (!on_path(path, false)) return;
      e.mode = static_cast<uint32_t>(number(arg(c, d ? 2 : 1)));
      if (k == op::mkdir || k == op::mkdirat) dirs_.insert(path);
      return emit();
    }
    case op::rmdir: case op::unlink: case op::unlinkat: {
      const bool d = k == op::unlinkat;
      const std::string path = at(d ? 0 : SIZE_MAX, d ? 1 : 0);
      if (!on_path(path, true)) return;
      if (d) e.flags = static_cast<uint32_t>(bits(arg(c, 2), at_flags));
      if (res == 0) file_at_.erase(path);
      return emit();
    }
    case op::rename: case op::renameat: case op::renameat2: case op::link: case op::linkat: {
      const bool d = k != op::rename && k != op::link;
      const std::string from = at(d ? 0 : SIZE_MAX, d ? 1 : 0), to = at(d ? 2 : SIZE_MAX, d ? 3 : 1);
      if (pseudo(from) || pseudo(to)) return nonfile(k, obj::other);
      on_path(from, true);
      e.path2 = w_.intern_path(to);
      if (k == op::renameat2 || k == op::linkat) e.flags = static_cast<uint32_t>(bits(arg(c, 4), at_flags));
      if (res == 0) {
        const bool moves = k == op::rename || k == op::renameat || k == op::renameat2;
        found_.try_emplace(to);  // made here, whatever was there
        std::vector<std::pair<std::string, file_id>> under;
        for (const auto& [p, f] : file_at_)
          if (p == from || (moves && p.compare(0, from.size() + 1, from + "/") == 0))
            under.emplace_back(p, f);
        for (const auto& [p, f] : under) {
          file_at_[to + p.substr(from.size())] = f;
          if (moves) file_at_.erase(p);
        }
        if (moves && dirs_.count(from)) dirs_.insert(to);
      }
      return emit();
    }
    case op::symlink: case op::symlinkat: {
      const bool d = k == op::symlinkat;
      const std::string path = at(d ? 1 : SIZE_MAX, d ? 2 : 1);
      if (!on_path(path, false)) return;
      e.aux = w_.intern_string(unquote(arg(c, 0)));
      return emit();
    }
    case op::stat: case op::lstat: case op::statfs: case op::access: case op::readlink: {
      const std::string path = at(SIZE_MAX, 0);
      if (!on_path(path, true)) return;
      if (k == op::stat || k == op::lstat) stat_of(path, arg(c, 1));
      if (k == op::access) e.mode = static_cast<uint32_t>(bits(arg(c, 1), {{"F_OK", 0}, {"R_OK", 4}, {"W_OK", 2}, {"X_OK", 1}}));
      if (k == op::readlink) {
        e.size = static_cast<uint64_t>(number(arg(c, 2)));
        if (res > 0) found_[path].target = unquote(arg(c, 1)), found_[path].mode = S_IFLNK | 0777;
      }
      return emit();
    }
    case op::newfstatat: case op::statx: case op::faccessat: case op::faccessat2: case op::readlinkat:
    case op::fchmodat: case op::fchmodat2: case op::fchownat: case op::utimensat: {
      const std::string name = unquote(arg(c, 1));
      const bool empty_path = name.empty() || arg(c, 1) == "NULL";
      if (empty_path) {  // AT_EMPTY_PATH, or utimensat(fd, NULL, ...): the fd's file
        open_file* o = on_fd(0);
        if (!o) return nonfile(k, file_of(pid, fd_arg(arg(c, 0))).kind);
        e.path = w_.intern_path(o->path);
        if (k == op::newfstatat) stat_of(o->path, arg(c, 2));
      } else {
        const std::string path = at(0, 1);
        if (!on_path(path, true)) return;
        e.fd = -1;
        if (k == op::newfstatat || k == op::statx) stat_of(path, arg(c, k == op::statx ? 4 : 2));
        if (k == op::readlinkat && res > 0)
          found_[path].target = unquote(arg(c, 2)), found_[path].mode = S_IFLNK | 0777;
      }
      switch (k) {
        case op::newfstatat: e.flags = static_cast<uint32_t>(bits(arg(c, 3), at_flags)); break;
        case op::statx:
          e.flags = static_cast<uint32_t>(bits(arg(c, 2), at_flags));
          e.aux = static_cast<uint64_t>(number(arg(c, 3)));
          break;
        case op::faccessat2: e.flags = static_cast<uint32_t>(bits(arg(c, 3), at_flags)); [[fallthrough]];
        case op::faccessat: e.mode = static_cast<uint32_t>(bits(arg(c, 2), {{"F_OK", 0}, {"R_OK", 4}, {"W_OK", 2}, {"X_OK", 1}})); break;
        case op::readlinkat: e.size = static_cast<uint64_t>(number(arg(c, 3))); break;
        case op::fchmodat: case op::fchmodat2: e.mode = static_cast<uint32_t>(number(arg(c, 2))); break;
        case op::fchownat:
          e.aux = static_cast<uint64_t>(static_cast<uint32_t>(number(arg(c, 2)))) << 32 |
                  static_cast<uint32_t>(number(arg(c, 3)));
          e.flags = static_cast<uint32_t>(bits(arg(c, 4), at_flags));
          break;
        case op::utimensat: {
          const std::string times = arg(c, 2);
          const auto one = [&](size_t from) -> int64_t {
            const std::string_view t = std::string_view(times).substr(from);
            if (t.substr(0, 10) == "UTIME_OMIT") return time_omit;
            if (t.substr(0, 9) == "UTIME_NOW") return time_now;
            const size_t s = t.find("tv_sec="), n = t.find("tv_nsec=");
            if (s == std::string_view::npos) return time_now;
            return number(t.substr(s + 7)) * 1'000'000'000 + (n == std::string_view::npos ? 0 : number(t.substr(n + 8)));
          };
          if (times == "NULL") {
            e.offset = e.offset2 = time_now;
          } else {
            const size_t second = times.find(", ", times.find('}') == std::string::npos ? 1 : times.find('}'));
            e.offset = one(1);
            e.offset2 = second == std::string::npos ? e.offset : one(second + 2);
          }
          e.flags = static_cast<uint32_t>(bits(arg(c, 3), at_flags));
          break;
        }
        default:
          break;
      }
      return emit();
    }
    case op::fstat: case op::fstatfs: case op::fsync: case op::fdatasync: case op::syncfs:
    case op::fchdir: case op::flock: case op::fchmod: case op::fchown: {
      open_file* o = on_fd(0);
      if (!o) return nonfile(k, file_of(pid, fd_arg(arg(c, 0))).kind);
      if (k == op::fstat) stat_of(o->path, arg(c, 1));
      if (k == op::fchmod) e.mode = static_cast<uint32_t>(number(arg(c, 1)));
      if (k == op::fchown)
        e.aux = static_cast<uint64_t>(static_cast<uint32_t>(number(arg(c, 1)))) << 32 |
                static_cast<uint32_t>(number(arg(c, 2)));
      if (k == op::flock)
        e.flags = static_cast<uint32_t>(bits(arg(c, 1), {{"LOCK_SH", 1}, {"LOCK_EX", 2}, {"LOCK_NB", 4}, {"LOCK_UN", 8}}));
      if (k == op::fchdir && res == 0) thread(pid).cwd = o->path;
      return emit();
    }
    case op::chmod: case op::chown: case op::lchown: {
      if (!on_path(at(SIZE_MAX, 0), true)) return;
      if (k == op::chmod) e.mode = static_cast<uint32_t>(number(arg(c, 1)));
      else e.aux = static_cast<uint64_t>(static_cast<uint32_t>(number(arg(c, 1)))) << 32 | static_cast<uint32_t>(number(arg(c, 2)));
      return emit();
    }
    case op::setxattr: case op::lsetxattr: case op::getxattr: case op::lgetxattr:
    case op::listxattr: case op::llistxattr: case op::removexattr: case op::lremovexattr:
    case op::fsetxattr: case op::fgetxattr: case op::flistxattr: case op::fremovexattr: {
      const bool by_fd = k == op::fsetxattr || k == op::fgetxattr || k == op::flistxattr || k == op::fremovexattr;
      if (by_fd) {
        if (!on_fd(0)) return nonfile(k, file_of(pid, fd_arg(arg(c, 0))).kind);
      } else if (!on_path(at(SIZE_MAX, 0), true)) {
        return;
      }
      const bool list = k == op::listxattr || k == op::llistxattr || k == op::flistxattr;
      if (!list) e.aux = w_.intern_string(unquote(arg(c, 1)));
      // what the file had before the program changed it: its names and sizes, where shown
      const std::string target = by_fd ? file_of(pid, fd_arg(arg(c, 0))).path : at(SIZE_MAX, 0);
      if (auto f = found_.find(target); f != found_.end() && f->second.existed && res > 0) {
        if (list && arg(c, 1).find('"') != std::string::npos) {  // not the size probe (NULL)
          const std::string names = unquote(arg(c, 1));
          for (size_t p = 0; p < names.size();) {
            const size_t z = names.find('\0', p);
            const std::string n = names.substr(p, z == std::string::npos ? std::string::npos : z - p);
            if (!n.empty()) f->second.xattrs.try_emplace(n, 0);
            if (z == std::string::npos) break;
            p = z + 1;
          }
        } else if (k == op::getxattr || k == op::lgetxattr || k == op::fgetxattr) {
          const auto x = f->second.xattrs.find(unquote(arg(c, 1)));
          if (x != f->second.xattrs.end() && !x->second) x->second = static_cast<uint32_t>(res);
        }
      }
      if (list) e.size = static_cast<uint64_t>(number(arg(c, 2)));
      else if (k == op::setxattr || k == op::lsetxattr || k == op::fsetxattr) {
        e.size = static_cast<uint64_t>(number(arg(c, 3)));
        e.flags = static_cast<uint32_t>(bits(arg(c, 4), {{"XATTR_CREATE", 1}, {"XATTR_REPLACE", 2}}));
      } else if (k == op::getxattr || k == op::lgetxattr || k == op::fgetxattr) {
        e.size = static_cast<uint64_t>(number(arg(c, 3)));
      }
      return emit();
    }
    case op::dup: case op::dup2: case op::dup3: case op::fcntl: {
      const fd_text f = fd_arg(arg(c, 0));
      open_file copy = file_of(pid, f);
      static const std::map<std::string_view, uint64_t> cmds = {
          {"F_DUPFD", 0}, {"F_GETFD", 1}, {"F_SETFD", 2}, {"F_GETFL", 3}, {"F_SETFL", 4},
          {"F_GETLK", 5}, {"F_SETLK", 6}, {"F_SETLKW", 7}, {"F_DUPFD_CLOEXEC", 1030}};
      int64_t to = -1;
      if (k == op::dup) to = res;
      if (k == op::dup2 || k == op::dup3) e.fd2 = static_cast<int32_t>(number(arg(c, 1))), to = res;
      if (k == op::dup3) e.flags = static_cast<uint32_t>(bits(arg(c, 2), open_flags));
      if (k == op::fcntl) {
        e.aux = bits(arg(c, 1), cmds);
        e.flags = static_cast<uint32_t>(bits(arg(c, 2), {{"FD_CLOEXEC", 1}}));
        if (e.aux == 0 || e.aux == 1030) to = res;
      }
      if (to >= 0 && res >= 0) fds(pid).insert_or_assign(to, copy);
      if (copy.kind != obj::storage) return nonfile(k, copy.kind);
      e.fd = static_cast<int32_t>(f.fd);
      e.file = copy.file;
      return emit();
    }
    case op::close_range:
      e.fd = static_cast<int32_t>(number(arg(c, 0)));
      e.fd2 = static_cast<int32_t>(number(arg(c, 1)));
      if (res == 0)
        for (auto it = fds(pid).lower_bound(e.fd); it != fds(pid).end() && it->first <= static_cast<uint32_t>(e.fd2);)
          it = fds(pid).erase(it);
      return emit();
    case op::chdir: {
      const std::string path = at(SIZE_MAX, 0);
      if (!on_path(path, true)) return;
      if (res == 0) thread(pid).cwd = path, dirs_.insert(path);
      return emit();
    }
    case op::clone: case op::clone3: case op::fork: case op::vfork: {
      uint64_t flags = k == op::vfork ? CLONE_VM | CLONE_VFORK : 0;
      for (const auto& a : c.args)
        if (const size_t f = a.find("flags="); f != std::string::npos)
          flags = bits(std::string_view(a).substr(f + 6, a.find_first_of(",}", f) - f - 6), clone_flags);
      e.flags = static_cast<uint32_t>(flags);
      if (res > 0) {
        thread_state parent = thread(pid);
        thread_state& child = threads_[static_cast<int32_t>(res)];
        child.tgid = flags & CLONE_THREAD ? parent.tgid : static_cast<int32_t>(res);
        child.ppid = flags & CLONE_THREAD ? parent.ppid : parent.tgid;
        child.comm = parent.comm;
        child.cwd = parent.cwd;
        if (flags & CLONE_FILES) {
          child.table = parent.table;
        } else {
          child.table = ++tables_;
          tables_fds_[child.table] = tables_fds_[parent.table];
        }
        e.aux = child.table;
      }
      return emit();
    }
    case op::execve: case op::execveat: {
      const std::string path = at(k == op::execveat ? 0 : SIZE_MAX, k == op::execveat ? 1 : 0);
      e.path = w_.intern_path(path);
      if (res == 0) {
        thread_state& t = thread(pid);
        t.comm = path.substr(path.rfind('/') + 1).substr(0, 15);
        auto& table = fds(pid);
        for (auto it = table.begin(); it != table.end();) it = it->second.cloexec ? table.erase(it) : std::next(it);
        e.aux = t.table;
        if (command.empty()) {  // the program the log starts with
          const std::string argv = arg(c, k == op::execveat ? 2 : 1);
          for (const auto& a : split_args(std::string_view(argv).substr(1, argv.size() > 1 ? argv.size() - 2 : 0)))
            command.push_back(unquote(a));
        }
        saw(path, true);
      }
      return emit();
    }
    case op::mmap: {
      const int64_t fd = number(arg(c, 4));
      if (fd < 0) return nonfile(k, obj::other);
      if (!on_fd(4)) return nonfile(k, file_of(pid, fd_arg(arg(c, 4))).kind);
      e.size = static_cast<uint64_t>(number(arg(c, 1)));
      e.mode = static_cast<uint32_t>(bits(arg(c, 2), prot_flags));
      e.flags = static_cast<uint32_t>(bits(arg(c, 3), map_flags));
      e.offset = number(arg(c, 5));
      if ((e.flags & MAP_SHARED) && (e.mode & PROT_WRITE)) w_.mark_incomplete(incomplete_shared_mmap);
      return emit();
    }
    case op::io_uring_setup: case op::io_uring_enter:
      w_.mark_incomplete(incomplete_io_uring);
      return emit();
    case op::io_setup: case op::io_submit:
      w_.mark_incomplete(incomplete_aio);
      return emit();
    default:
      return emit();  // counted as the recorder counts it, its fields as the log gives them
  }
}
}  // namespace

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
    importer imp(*w, r);
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
