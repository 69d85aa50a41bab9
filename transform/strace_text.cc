#include "strace_text.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <cctype>
#include <cstring>
#include <unordered_map>

namespace fsrr::transform::strace {

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

}  // namespace fsrr::transform::strace
