#include "shell_export.h"

#include <fcntl.h>
#include <linux/falloc.h>
#include <linux/fs.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "fd_map.h"

namespace fsrr::transform {
namespace {

// A string as one single-quoted shell word.
std::string sh_word(std::string_view s) {
  std::string out = "'";
  for (const char c : s) {
    if (c == '\'')
      out += "'\\''";
    else
      out += c;
  }
  return out + "'";
}

// A comment line: the text, with line breaks (a name may hold one) shown as \n.
std::string comment(std::string_view text) {
  std::string out = "# ";
  for (const char c : text) {
    if (c == '\n')
      out += "\\n";
    else if (c == '\r')
      out += "\\r";
    else
      out += c;
  }
  return out;
}

class script {
 public:
  script(trace_reader& in, const std::function<std::string(const event&)>& describe,
         std::optional<uint64_t> crash_after)
      : in_(in), describe_(describe), crash_after_(crash_after), fds_(threads(in)) {}
  bool crashed() const { return crashed_; }

  std::string run(shell_export_result& r) {
    header();
    tree(r);
    out_ << "\n# -- the ops, in trace order\n";
    auto events = in_.events();
    for (event e; !crashed_ && events.next(e);) op(e, r);
    if (crashed_) return out_.str();
    for (const auto& [h, n] : script_fd_)
      if (n >= 0) out_ << fmt::format("exec {}>&-\n", n);
    if (!events.status()) return {};
    return out_.str();
  }

 private:
  static std::vector<thread_info> threads(trace_reader& in) {
    std::vector<thread_info> t(in.thread_count() + 1);
    for (thread_id k = 1; k < t.size(); ++k) t[k] = in.thread(k);
    return t;
  }

  void header() {
    const header_info& h = in_.header();
    std::string command;
    for (const std::string& a : h.command) command += (command.empty() ? "" : " ") + a;
    std::set<thread_id> threads;
    out_ << "#!/bin/bash\n"
         << comment(fmt::format("written by fsrr export --shell from a trace of: {}", command)) << "\n"
         << comment(fmt::format("trace id {}; {} events, an initial tree of {} entries",
                                h.trace_id, in_.summary().events, in_.tree().size()))
         << "\n"
         << "# Run as `bash THIS TARGET`, TARGET an empty directory on the file system under test:\n"
            "# the initial tree is made beneath it, then each op is issued, one after another in\n"
            "# the trace's order (the threads of the recording in turn), each after its line as\n"
            "# `fsrr dump` shows it. Data is random. An open file is an fd of this shell\n"
            "# (`exec N<>`), so reads and writes move its position as the program's did.\n"
            "set -u\n"
            "T=${1:?usage: bash $0 TARGET (an empty directory on the file system under test)}\n"
            "[ -d \"$T\" ] || { echo \"$0: $T is not a directory\" >&2; exit 2; }\n"
            "# no fd of the caller's is taken for one of the trace's (bash reads this script on 255)\n"
            "for fd in /proc/$$/fd/*; do\n"
            "  fd=${fd##*/}; [ \"$fd\" -gt 2 ] && [ \"$fd\" -lt 255 ] && eval \"exec $fd>&-\"\n"
            "done 2>/dev/null\n";
  }

  // The path beneath TARGET ("/a/b", or "/rootN/a/b" with several roots), or "" when a
  // component is not a name (a hostile trace).
  std::string plain(path_id p) {
    if (p == no_id) return {};
    std::vector<std::string_view> names;
    for (path_id q = p; q != no_id;) {
      const path_entry e = in_.path(q);
      if (e.parent == no_id || e.parent == q) break;
      names.push_back(e.name);
      q = e.parent;
      if (names.size() > 4096) return {};
    }
    std::string s;
    for (auto it = names.rbegin(); it != names.rend(); ++it) {
      if (it->empty() || *it == "." || *it == ".." || it->find('/') != std::string_view::npos ||
          it->find('\0') != std::string_view::npos)
        return {};
      s += '/';
      s += *it;
    }
    const std::string placed = in_.placed_path(p);
    if (placed.size() < s.size() || placed.compare(placed.size() - s.size(), s.size(), s) != 0)
      return {};
    const std::string prefix = placed.substr(0, placed.size() - s.size());  // "" or "/rootN"
    if (!prefix.empty() && (!prefix.starts_with("/root") || prefix.size() == 5 ||
                            prefix.find_first_not_of("0123456789", 5) != std::string::npos))
      return {};
    return prefix + s;
  }
  // The same as one shell word beneath "$T".
  std::string where(path_id p) {
    const std::string s = plain(p);
    return s.empty() ? s : "\"$T\"" + sh_word(s);
  }

  // Whether `p` passes through a known symlink: above it, or (`final`) at it too. By name:
  // two path ids may name one path.
  bool through_symlink(path_id p, bool final) {
    const std::string s = plain(p);
    for (size_t at = s.find('/', 1); at != std::string::npos; at = s.find('/', at + 1))
      if (symlinks_.count(s.substr(0, at))) return true;
    return final && symlinks_.count(s);
  }

  // Whether `p` is a known symlink or a directory with one beneath it.
  bool holds_symlink(path_id p) {
    const std::string s = plain(p);
    if (symlinks_.count(s)) return true;
    const auto it = symlinks_.lower_bound(s + "/");  // what lies beneath sorts right after it
    return it != symlinks_.end() && it->starts_with(s + "/");
  }
  void add_symlink(path_id p) {
    if (std::string s = plain(p); !s.empty()) symlinks_.insert(std::move(s));
  }

  void tree(shell_export_result& r) {
    std::vector<tree_entry> entries(in_.tree().begin(), in_.tree().end());
    for (const tree_entry& t : entries)
      if (S_ISLNK(t.mode)) add_symlink(t.path);
    // parents first; symlinks last, so that nothing is made through one
    std::vector<std::pair<std::string, size_t>> order;
    for (size_t i = 0; i < entries.size(); ++i) {
      std::string w = where(entries[i].path);
      order.emplace_back(std::move(w), i);
    }
    std::stable_sort(order.begin(), order.end(), [&](const auto& a, const auto& b) {
      const bool la = S_ISLNK(entries[a.second].mode), lb = S_ISLNK(entries[b.second].mode);
      if (la != lb) return lb;
      return std::count(a.first.begin(), a.first.end(), '/') <
             std::count(b.first.begin(), b.first.end(), '/');
    });
    out_ << fmt::format("\n# -- the initial tree: {} entries\n", entries.size());
    std::map<uint32_t, std::string> first_link;  // link group -> its first name
    std::vector<std::string> dir_modes;
    for (const auto& [w, i] : order) {
      const tree_entry& t = entries[i];
      if (in_.path(t.path).parent == no_id || in_.path(t.path).parent == t.path) continue;  // "/"
      if (w.empty() || through_symlink(t.path, false)) {
        out_ << comment(fmt::format("not made: {} (a name a script cannot confine)",
                                    in_.path_string(t.path)))
             << "\n";
        ++r.comments, ++r.unsafe;
        continue;
      }
      const unsigned perm = t.mode & 07777;
      if (t.link_group) {
        auto [it, first] = first_link.emplace(t.link_group, w);
        if (!first) {
          out_ << fmt::format("ln -T -- {} {}\n", it->second, w);
          ++r.tree_entries;
          continue;
        }
      }
      if (S_ISDIR(t.mode)) {
        out_ << fmt::format("mkdir -p -- {}", w);
        // after everything beneath it is made: a directory of 0555 takes no new entry
        if (perm != 0755) dir_modes.push_back(fmt::format("chmod {:o} -- {}", perm, w));
      } else if (S_ISREG(t.mode)) {
        if (t.size == 0)
          out_ << fmt::format(": >{}", w);
        else if (t.allocated < t.size && t.allocated == 0)
          out_ << fmt::format("truncate -s {} -- {}", t.size, w);
        else
          out_ << fmt::format("head -c {} /dev/urandom >{}", t.size, w);
        if (perm != 0644) out_ << fmt::format(" && chmod {:o} -- {}", perm, w);
      } else if (S_ISLNK(t.mode)) {
        out_ << fmt::format("ln -s -T -- {} {}", sh_word(in_.string(t.target)), w);
      } else if (S_ISFIFO(t.mode)) {
        out_ << fmt::format("mkfifo -m {:o} -- {}", perm, w);
      } else {
        out_ << comment(fmt::format("not made: {} (mode {:o})", in_.path_string(t.path), t.mode)) << "\n";
        ++r.comments;
        continue;
      }
      out_ << "\n";
      ++r.tree_entries;
    }
    for (const std::string& c : dir_modes) out_ << c << "\n";
  }

  // The script's fd for handle h (opened by the script), or -1.
  int fd_of(handle_id h) const {
    const auto it = script_fd_.find(h);
    return it == script_fd_.end() ? -1 : it->second;
  }
  int new_fd(handle_id h) {
    int n = 3;
    while (used_.count(n)) ++n;
    used_.insert(n);
    script_fd_[h] = n;
    return n;
  }
  std::string proc(int n) const { return fmt::format("/proc/self/fd/{}", n); }

  void op(const event& e, shell_export_result& r) {
    fd_effect fx;
    fds_.apply(e, fx);
    const std::string line = describe_(e);
    std::string cmd = command(e, fx, r);
    // where reads and writes leave the fds' positions, for a later lseek
    if (e.result > 0) {
      if (e.kind == op::read || e.kind == op::write || e.kind == op::readv || e.kind == op::writev)
        pos_[fx.h1] += e.result;
      if (fx.pos1) pos_[fx.h1] += e.result;
      if (fx.pos2) pos_[fx.h2] += e.result;
    }
    const bool counted = info(e.kind).cls != op_class::stream;
    out_ << comment(counted ? fmt::format("op {}: {}", seq_, line) : line) << "\n";
    if (!cmd.empty()) {
      out_ << cmd << "\n";
      if (cmd[0] != '#') ++r.ops;
    }
    if (counted && crash_after_ && seq_ == *crash_after_) {
      out_ << fmt::format(
          "\n# -- the crash point: the power is cut right after op {}. CRASH runs here, then the\n"
          "# script stops. By default `xfs_io -x -c shutdown TARGET`: the file system stops at\n"
          "# once without writing what is not on stable storage yet (xfs and ext4, as xfstests'\n"
          "# godown); unmount and mount it again to see what survived. CRASH=: skips it; give a\n"
          "# command that cuts the power of the test machine for the real thing.\n"
          "eval \"${{CRASH-xfs_io -x -c shutdown \\\"\\$T\\\"}}\"\n"
          "exit 0\n",
          seq_);
      crashed_ = true;
      return;
    }
    if (counted) ++seq_;
    for (const handle_id h : fx.released) {  // the last fd of an open file went
      const int n = fd_of(h);
      if (n < 0) continue;
      out_ << fmt::format("exec {}>&-\n", n);
      used_.erase(n);
      script_fd_.erase(h);
    }
  }

  // The command for `e` ("" when it needs none: fd table and process ops, or a comment was
  // written).
  std::string command(const event& e, const fd_effect& fx, shell_export_result& r) {
    const op_class cls = info(e.kind).cls;
    if (cls == op_class::fd_table || cls == op_class::process || e.kind == op::close ||
        e.kind == op::close_range)
      return {};  // the fd table is followed above; a file's last close closes the script's fd
    const auto skip = [&](std::string_view why) {
      ++r.comments;
      return comment(fmt::format("  (not issued: {})", why));
    };
    if (e.result < 0) return skip("it failed in the recording");
    // the path ops: checked, beneath "$T", not through a symlink
    const bool follows_final = !(e.kind == op::unlink || e.kind == op::unlinkat || e.kind == op::rmdir ||
                                 e.kind == op::rename || e.kind == op::renameat ||
                                 e.kind == op::renameat2 || e.kind == op::lstat ||
                                 e.kind == op::symlink || e.kind == op::symlinkat ||
                                 e.kind == op::link || e.kind == op::linkat ||
                                 e.kind == op::readlink || e.kind == op::readlinkat ||
                                 (e.kind == op::newfstatat && (e.flags & AT_SYMLINK_NOFOLLOW)));
    std::string p1, p2;
    if (has(e.kind, F_PATH) && e.path != no_id) {
      p1 = where(e.path);
      if (p1.empty() || through_symlink(e.path, follows_final)) {
        ++r.unsafe;
        return skip("its path is not one a script can confine");
      }
    }
    if (has(e.kind, F_PATH2) && e.path2 != no_id) {
      p2 = where(e.path2);
      if (p2.empty() || through_symlink(e.path2, false)) {
        ++r.unsafe;
        return skip("its path is not one a script can confine");
      }
    }
    const int n1 = fx.h1 ? fd_of(fx.h1) : -1, n2 = fx.h2 ? fd_of(fx.h2) : -1;
    const uint64_t size = e.result >= 0 && static_cast<uint64_t>(e.result) < e.size
                              ? static_cast<uint64_t>(e.result)
                              : e.size;
    switch (cls) {
      case op_class::open: {
        if (!fx.opened || p1.empty()) return skip("no path");
        if ((e.flags & O_TMPFILE) == O_TMPFILE) return skip("O_TMPFILE: a file without a name");
        const int n = new_fd(fx.h1);
        pos_[fx.h1] = 0;
        const uint32_t flags = e.kind == op::creat ? O_CREAT | O_WRONLY | O_TRUNC : e.flags;
        const uint32_t acc = flags & O_ACCMODE;
        std::string c;
        if ((flags & O_CREAT) && (flags & O_EXCL))
          c = fmt::format("(set -C; : >{}) && ", p1);  // noclobber: made here, or it fails
        // an open the recording saw succeed that fails here ends the script: what follows
        // would use an fd that is not the file
        const std::string fail = fmt::format(" || {{ echo \"$0: op {}: the open failed\" >&2; exit 1; }}", seq_);
        if (acc == O_RDONLY && !(flags & O_CREAT)) return c + fmt::format("exec {}<{}", n, p1) + fail;
        if (flags & O_APPEND) return c + fmt::format("exec {}>>{}", n, p1) + fail;
        if (acc == O_WRONLY && (flags & O_TRUNC)) return c + fmt::format("exec {}>{}", n, p1) + fail;
        c += fmt::format("exec {}<>{}", n, p1);
        if (flags & O_TRUNC) c += fmt::format(" && truncate -s 0 -- {}", proc(n));
        c += fail;
        return c;
      }
      default:
        break;
    }
    // ops on an fd need the script's fd for it
    const bool on_fd = has(e.kind, F_FD) && !(has(e.kind, F_PATH) && e.path != no_id);
    if (on_fd && n1 < 0 && e.kind != op::sync)
      return skip("its fd is not a file this script opened (a pipe, socket or terminal, or open before the trace began)");
    switch (e.kind) {
      case op::read:
      case op::readv:
        return fmt::format("head -c {} <&{} >/dev/null", size, n1);
      case op::write:
      case op::writev:
        return fmt::format("head -c {} /dev/urandom >&{}", size, n1);
      case op::pread64:
      case op::preadv:
      case op::preadv2:
        return fmt::format("dd if={} bs=1M iflag=skip_bytes,count_bytes skip={} count={} status=none >/dev/null",
                           proc(n1), e.offset, size);
      case op::pwrite64:
      case op::pwritev:
      case op::pwritev2:
        return fmt::format("head -c {} /dev/urandom | dd of={} bs=1M iflag=fullblock oflag=seek_bytes "
                           "seek={} conv=notrunc status=none",
                           size, proc(n1), e.offset);
      case op::lseek: {
        // the new position is the result; from where the fd is now, forward, or reopened
        const int64_t now = pos_[fx.h1], to = e.result;
        pos_[fx.h1] = to;
        if (to == now) return {};
        if (to > now)
          return fmt::format("dd iflag=skip_bytes skip={} count=0 status=none <&{}", to - now, n1);
        return fmt::format("exec {0}<>{1} && dd iflag=skip_bytes skip={2} count=0 status=none <&{0}",
                           n1, proc(n1), to);
      }
      case op::copy_file_range:
      case op::sendfile: {
        // fd: in, fd2: out for copy_file_range; fd: out, fd2: in for sendfile
        const int in = e.kind == op::copy_file_range ? n1 : n2, out = e.kind == op::copy_file_range ? n2 : n1;
        if (in < 0 || out < 0) return skip("its fds are not files this script opened");
        return fmt::format("head -c {} <&{} >&{}", size, in, out);
      }
      case op::fsync:
        return fmt::format("sync -- {}", proc(n1));
      case op::fdatasync:
        return fmt::format("sync -d -- {}", proc(n1));
      case op::syncfs:
        return fmt::format("sync -f -- {}", proc(n1));
      case op::sync:
        return "sync";
      case op::ftruncate:
        return fmt::format("truncate -s {} -- {}", e.size, proc(n1));
      case op::truncate:
        return fmt::format("truncate -s {} -- {}", e.size, p1);
      case op::fallocate: {
        std::string flags;
        if (e.flags & FALLOC_FL_PUNCH_HOLE) flags += " -p";
        else if (e.flags & FALLOC_FL_KEEP_SIZE) flags += " -n";
        if (e.flags & FALLOC_FL_ZERO_RANGE) flags += " -z";
        if (e.flags & FALLOC_FL_COLLAPSE_RANGE) flags += " -c";
        if (e.flags & FALLOC_FL_INSERT_RANGE) flags += " -i";
        return fmt::format("fallocate{} -o {} -l {} -- {}", flags, e.offset, e.size, proc(n1));
      }
      case op::mkdir:
      case op::mkdirat:
        return fmt::format("mkdir -- {}", p1);
      case op::rmdir:
        return fmt::format("rmdir -- {}", p1);
      case op::unlink:
        return fmt::format("unlink -- {}", p1);
      case op::unlinkat:
        return fmt::format("{} -- {}", e.flags & AT_REMOVEDIR ? "rmdir" : "unlink", p1);
      case op::rename:
      case op::renameat:
      case op::renameat2:
        if (e.flags & RENAME_EXCHANGE) return skip("RENAME_EXCHANGE (bookworm's mv has no --exchange)");
        if (holds_symlink(e.path)) add_symlink(e.path2);  // all beneath it refused, then
        return fmt::format("mv -T{} -- {} {}", e.flags & RENAME_NOREPLACE ? " -n" : "", p1, p2);
      case op::link:
      case op::linkat:
        if (symlinks_.count(plain(e.path))) add_symlink(e.path2);
        return fmt::format("ln -T -- {} {}", p1, p2);
      case op::symlink:
      case op::symlinkat:
        add_symlink(e.path);
        return fmt::format("ln -s -T -- {} {}", sh_word(in_.string(static_cast<string_id>(e.aux))), p1);
      case op::chmod:
      case op::fchmodat:
      case op::fchmodat2:
        return fmt::format("chmod {:o} -- {}", e.mode & 07777, p1);
      case op::fchmod:
        return fmt::format("chmod {:o} -- {}", e.mode & 07777, proc(n1));
      case op::stat:
      case op::newfstatat:
      case op::statx:
        if (!p1.empty())
          return fmt::format("stat {}-- {} >/dev/null", follows_final ? "-L " : "", p1);
        return n1 >= 0 ? fmt::format("stat -L -- {} >/dev/null", proc(n1)) : std::string();
      case op::lstat:
        return fmt::format("stat -- {} >/dev/null", p1);
      case op::fstat:
        return fmt::format("stat -L -- {} >/dev/null", proc(n1));
      case op::getdents:
      case op::getdents64:
        if (listed_.insert(fx.h1).second) return fmt::format("ls -f -- {} >/dev/null", proc(n1));
        return {};
      case op::readlink:
      case op::readlinkat:
        return fmt::format("readlink -- {} >/dev/null", p1);
      case op::access:
      case op::faccessat:
      case op::faccessat2:
        return fmt::format("test -e {}", p1);
      default:
        if (cls == op_class::xattr) return skip("xattrs are not set or read (setfattr is not coreutils)");
        if (cls == op_class::attr) return skip("times and owners are not set");
        return skip("not expressible with coreutils");
    }
  }

  trace_reader& in_;
  const std::function<std::string(const event&)>& describe_;
  std::optional<uint64_t> crash_after_;
  bool crashed_ = false;
  uint64_t seq_ = 0;
  fd_map fds_;
  std::ostringstream out_;
  std::map<handle_id, int> script_fd_;
  std::set<int> used_;
  std::map<handle_id, int64_t> pos_;  // where lseek left each fd, as far as the script knows
  std::set<handle_id> listed_;
  std::set<std::string> symlinks_;  // by name beneath TARGET
};

}  // namespace

result<shell_export_result> export_shell(trace_reader& in, const std::string& path,
                                         const std::function<std::string(const event&)>& describe,
                                         std::optional<uint64_t> crash_after) {
  struct stat st;
  if (::lstat(path.c_str(), &st) == 0) return failure("{} exists", path);
  shell_export_result r;
  script s(in, describe, crash_after);
  const std::string text = s.run(r);
  if (text.empty()) return failure("{}: the trace's events cannot be read", in.header().trace_id);
  if (crash_after && !s.crashed())
    return failure("--crash-after {}: the trace has no op {} (ops count from 0, as crashtest's)",
                   *crash_after, *crash_after);
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0755);
  if (fd < 0) return failure("{}: {}", path, std::strerror(errno));
  const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  if (!ok) {
    ::unlink(path.c_str());
    return failure("{}: cannot write it", path);
  }
  return r;
}

}  // namespace fsrr::transform
