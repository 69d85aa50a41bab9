#include "verify.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstring>
#include <iterator>
#include <optional>
#include <thread>
#include <unordered_map>

#include <fmt/format.h>

#include "privilege.h"
#include "syscall_nr.h"

namespace fsrr {
namespace {

const char* type_name(uint32_t mode) {
  switch (mode & S_IFMT) {
    case S_IFREG:
      return "file";
    case S_IFDIR:
      return "directory";
    case S_IFLNK:
      return "symlink";
    case S_IFIFO:
      return "fifo";
    case S_IFSOCK:
      return "socket";
    case S_IFCHR:
      return "char device";
    case S_IFBLK:
      return "block device";
  }
  return "unknown";
}

int64_t ns(const timespec& t) {
  return int64_t(t.tv_sec) * 1000000000 + t.tv_nsec;
}

std::vector<std::pair<std::string, uint32_t>> sorted(
    std::vector<std::pair<std::string, uint32_t>> v) {
  std::sort(v.begin(), v.end());
  return v;
}

std::vector<std::pair<std::string, uint32_t>> read_xattrs(int fd) {
  // An O_PATH fd serves the xattr calls through its /proc link: the link jumps to the fd's own
  // inode (a symlink stays itself), so nothing is resolved again.
  const std::string p = fmt::format("/proc/self/fd/{}", fd);
  std::vector<std::pair<std::string, uint32_t>> out;
  std::vector<char> names(4096);
  const ssize_t n = ::listxattr(p.c_str(), names.data(), names.size());
  if (n <= 0) return out;
  for (size_t pos = 0; pos < static_cast<size_t>(n);) {
    const char* name = names.data() + pos;
    pos += std::strlen(name) + 1;
    const ssize_t size = ::getxattr(p.c_str(), name, nullptr, 0);
    out.emplace_back(name, size < 0 ? 0 : static_cast<uint32_t>(size));
  }
  return sorted(std::move(out));
}

// The same for `leaf` in directory `dirfd`, not followed, with the *xattrat calls (6.13);
// nullopt where they are missing.
std::atomic<bool> have_xattrat{true};
std::optional<std::vector<std::pair<std::string, uint32_t>>> read_xattrs_at(int dirfd,
                                                                            const char* leaf) {
  if (!have_xattrat.load(std::memory_order_relaxed)) return std::nullopt;
  std::vector<char> names(4096);
  const long n =
      ::syscall(nr::listxattrat, dirfd, leaf, AT_SYMLINK_NOFOLLOW, names.data(), names.size());
  if (n < 0 && errno == ENOSYS) {
    have_xattrat.store(false, std::memory_order_relaxed);
    return std::nullopt;
  }
  std::vector<std::pair<std::string, uint32_t>> out;
  for (size_t pos = 0; n > 0 && pos < static_cast<size_t>(n);) {
    const char* name = names.data() + pos;
    pos += std::strlen(name) + 1;
    nr::xattr_args args{0, 0, 0};
    const long size =
        ::syscall(nr::getxattrat, dirfd, leaf, AT_SYMLINK_NOFOLLOW, name, &args, sizeof args);
    out.emplace_back(name, size < 0 ? 0 : static_cast<uint32_t>(size));
  }
  return sorted(std::move(out));
}

// The directory the entries of one parent are looked at through: entries come sorted, so
// siblings come in a row and the parent is resolved (confined) once for them.
class parent_dir {
 public:
  explicit parent_dir(const target_root& t) : target_(t) {}
  ~parent_dir() { reset(); }
  // The parent of `at` (not a root itself), opened O_PATH beneath the target; -errno.
  int of(const target_root::location& at) {
    const size_t slash = at.rel.rfind('/');
    const target_root::location parent{at.root,
                                       slash == std::string::npos ? "" : at.rel.substr(0, slash)};
    if (parent.root == root_ && parent.rel == rel_ && fd_ != -EBADF) return fd_;
    reset();
    root_ = parent.root;
    rel_ = parent.rel;
    fd_ = target_.open(parent, O_PATH | O_DIRECTORY);
    return fd_;
  }

 private:
  void reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -EBADF;
  }
  const target_root& target_;
  int root_ = -1;
  std::string rel_;
  int fd_ = -EBADF;
};

}  // namespace

// A name of a hard-link group, as found: the groups are checked once every part is done.
struct comparer::member {
  uint32_t group;
  dev_t dev;
  ino_t ino;
  std::string path;
};

namespace {
using group_member = comparer::member;

// Whether the file open at `fd` holds `content`, as `data` makes it: "" if so, or where not.
std::string content_difference(int fd, const std::vector<source_piece>& content,
                               const data_source& data, std::vector<uint8_t>& got,
                               std::vector<uint8_t>& want) {
  constexpr size_t chunk = 1 << 20;
  got.resize(chunk);
  want.resize(chunk);
  uint64_t pos = 0;
  for (const source_piece& p : content) {
    for (uint64_t done = 0; done < p.length;) {
      const size_t n = static_cast<size_t>(std::min<uint64_t>(p.length - done, chunk));
      const ssize_t r = ::pread(fd, got.data(), n, static_cast<off_t>(pos));
      if (r < 0) return fmt::format("cannot read: {}", std::strerror(errno));
      if (static_cast<size_t>(r) != n) return fmt::format("ends at byte {}", pos + r);
      if (p.key == zero_key)
        std::memset(want.data(), 0, n);
      else
        data.fill(p.key, p.offset + done, {want.data(), n});
      if (std::memcmp(got.data(), want.data(), n) != 0) {
        size_t i = 0;
        while (got[i] == want[i]) ++i;
        return p.key == zero_key
                   ? fmt::format("content differs at byte {}: zeros expected", pos + i)
                   : fmt::format("content differs at byte {}: expected data {} at {}", pos + i,
                                 p.key, p.offset + done + i);
      }
      pos += n;
      done += n;
    }
  }
  return {};
}

// compare() over [begin, end): the differences in path order, and the link-group members seen.
void check_range(expected_state::const_iterator begin, expected_state::const_iterator end,
                 const target_root& target, const verify_options& options,
                 std::vector<difference>& diffs, std::vector<group_member>& members) {
  parent_dir parent(target);
  std::vector<uint8_t> read_buf, want_buf;  // --content
  for (auto it = begin; it != end; ++it) {
    const std::string& path = it->first;
    const expected_entry& x = it->second;
    auto differ = [&](std::string what) { diffs.push_back({path, std::move(what)}); };
    const auto at = target.locate(path);
    if (!at) {
      differ("path is not confined to the target");
      continue;
    }
    // An entry below a directory is looked at by name in it (the directory was opened
    // confined; a name has no '/'); TARGET and the --map destinations themselves by fd.
    const bool by_name = !at->rel.empty();
    const int dir = by_name ? parent.of(*at) : -EBADF;
    const char* leaf = by_name ? at->rel.c_str() + (at->rel.rfind('/') + 1) : "";
    const int fd = by_name ? dir : target.open(*at, O_PATH | O_NOFOLLOW);
    struct stat st;
    int got = fd;
    if (fd >= 0)
      got = ::fstatat(fd, leaf, &st, AT_SYMLINK_NOFOLLOW | (by_name ? 0 : AT_EMPTY_PATH)) == 0
                ? 0
                : -errno;
    if (got < 0) {
      if (!by_name && fd >= 0) ::close(fd);
      if (!x.absent)
        differ(got == -ENOENT || got == -ENOTDIR
                   ? "missing"
                   : fmt::format("cannot stat: {}", std::strerror(-got)));
      continue;
    }
    if (x.absent) {
      differ("exists, expected absent");
    } else if ((st.st_mode & S_IFMT) != (x.mode & S_IFMT)) {
      differ(fmt::format("is a {}, expected a {}", type_name(st.st_mode), type_name(x.mode)));
    } else {
      const uint32_t perm = options.keep_privileged ? 07777 : 07777 & ~set_id_bits;
      if (x.check_mode && !S_ISLNK(x.mode) && (st.st_mode & perm) != (x.mode & perm))
        differ(fmt::format("mode {:04o}, expected {:04o}", st.st_mode & perm, x.mode & perm));
      const bool size_ok = static_cast<uint64_t>(st.st_size) == x.size;
      if (x.check_size && S_ISREG(x.mode) && !size_ok)
        differ(fmt::format("size {}, expected {}", st.st_size, x.size));
      if (options.content && x.check_content && S_ISREG(x.mode) && size_ok && by_name) {
        const int f = ::openat(fd, leaf, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        const std::string what =
            f < 0 ? fmt::format("cannot open: {}", std::strerror(errno))
                  : content_difference(f, x.content, *options.content, read_buf, want_buf);
        if (f >= 0) ::close(f);
        if (!what.empty()) differ(what);
      }
      if (S_ISLNK(x.mode)) {
        char buf[PATH_MAX];
        const ssize_t n = ::readlinkat(fd, leaf, buf, sizeof buf);
        const std::string got = n >= 0 ? std::string(buf, static_cast<size_t>(n)) : "";
        if (got != x.target) differ(fmt::format("link target '{}', expected '{}'", got, x.target));
      }
      if (options.times && x.check_mtime && ns(st.st_mtim) != x.mtime_ns)
        differ(fmt::format("mtime {}, expected {}", ns(st.st_mtim), x.mtime_ns));
      if (options.owners && x.check_owner && (st.st_uid != x.uid || st.st_gid != x.gid))
        differ(fmt::format("owner {}:{}, expected {}:{}", st.st_uid, st.st_gid, x.uid, x.gid));
      if (x.check_xattrs && !S_ISLNK(x.mode)) {
        auto at_name = by_name ? read_xattrs_at(fd, leaf) : std::nullopt;
        if (!at_name) {
          const int own = by_name ? ::openat(fd, leaf, O_PATH | O_NOFOLLOW | O_CLOEXEC) : fd;
          at_name = own >= 0 ? read_xattrs(own) : decltype(read_xattrs(own)){};
          if (by_name && own >= 0) ::close(own);
        }
        auto& got = *at_name;
        const auto* want = &x.xattrs;
        std::vector<std::pair<std::string, uint32_t>> unprivileged;
        if (!options.keep_privileged) {
          const auto privileged = [](const auto& a) { return privileged_xattr(a.first); };
          std::erase_if(got, privileged);
          if (std::any_of(want->begin(), want->end(), privileged)) {
            std::remove_copy_if(want->begin(), want->end(), std::back_inserter(unprivileged),
                                privileged);
            want = &unprivileged;
          }
        }
        if (got != *want) {
          std::string g, w;
          for (const auto& [n, sz] : got) g += fmt::format("{}{}={}", g.empty() ? "" : ",", n, sz);
          for (const auto& [n, sz] : *want)
            w += fmt::format("{}{}={}", w.empty() ? "" : ",", n, sz);
          differ(fmt::format("xattrs [{}], expected [{}]", g, w));
        }
      }
      if (x.link_group != 0) members.push_back({x.link_group, st.st_dev, st.st_ino, path});
    }
    if (!by_name) ::close(fd);
  }
}

}  // namespace

std::vector<difference> compare(const expected_state& expected, const target_root& target,
                                const verify_options& options) {
  comparer c(target, options);
  c.check(expected);
  return c.finish();
}

comparer::comparer(const target_root& target, const verify_options& options)
    : target_(target), options_(options) {}

comparer::~comparer() = default;

void comparer::check(const expected_state& expected) {
  // Large states are looked at by a few threads, each over a contiguous range of paths (the
  // look-ups are system calls: they scale with the cores).
  constexpr size_t per_thread_at_least = 8192;
  const size_t cores = std::max(1u, std::thread::hardware_concurrency());
  const size_t threads =
      std::clamp<size_t>(expected.size() / per_thread_at_least, 1,
                         options_.threads ? options_.threads : std::min<size_t>(cores, 4));
  std::vector<std::vector<difference>> diffs(threads);
  const size_t first = members_.size();
  members_.resize(first + threads);
  {
    std::vector<std::jthread> workers;
    auto from = expected.begin();
    for (size_t t = 0; t < threads; ++t) {
      auto to = from;
      std::advance(to, t + 1 == threads ? std::distance(from, expected.end())
                                        : static_cast<ptrdiff_t>(expected.size() / threads));
      auto& found = members_[first + t];
      if (t + 1 == threads)
        check_range(from, to, target_, options_, diffs[t], found);  // this thread's share
      else
        workers.emplace_back(
            [&, from, to, t] { check_range(from, to, target_, options_, diffs[t], found); });
      from = to;
    }
  }
  for (auto& d : diffs) std::move(d.begin(), d.end(), std::back_inserter(diffs_));
  checked_ += expected.size();
}

std::vector<difference> comparer::finish() {
  std::vector<difference> out = std::move(diffs_);
  // every name of a group on the inode its first name (in path order) is on
  std::vector<const member*> names;
  for (const auto& list : members_)
    for (const member& m : list) names.push_back(&m);
  std::stable_sort(names.begin(), names.end(),
                   [](const member* a, const member* b) { return a->path < b->path; });
  std::unordered_map<uint32_t, std::pair<dev_t, ino_t>> groups;
  for (const member* m : names) {
    auto [it, first] = groups.try_emplace(m->group, m->dev, m->ino);
    if (!first && it->second != std::pair<dev_t, ino_t>{m->dev, m->ino})
      out.push_back({m->path, "not a hard link of the other names of its inode"});
  }
  // in path order, each path's differences in the order found
  std::stable_sort(out.begin(), out.end(),
                   [](const difference& a, const difference& b) { return a.path < b.path; });
  // A path in two parts (end_state_model::take: one removed path under two ids) is one path.
  out.erase(std::unique(out.begin(), out.end(),
                        [](const difference& a, const difference& b) {
                          return a.path == b.path && a.what == b.what;
                        }),
            out.end());
  return out;
}

result<void> check_end_state(trace_reader& trace, comparer& c, model_content content,
                             size_t batch) {
  end_state_model m(trace, content);
  {  // the stream's blocks (~20 MiB) let go of before the state is taken apart
    auto events = trace.events();
    event e;
    while (events.next(e)) m.apply(e);
    FSRR_TRY(events.status());
  }
  m.take(batch, [&](const expected_state& part) { c.check(part); });
  return {};
}

}  // namespace fsrr
