// libFuzzer harness for the replay engine. The input is not a trace but a recipe for one: the
// bytes choose an initial tree and a few hundred events from a vocabulary made to be hostile
// ('..' and absolute names, symlinks to '/', to the sandbox and to the canary beside the
// target, fds reused across threads and fd tables, renames over parents, sizes and offsets
// near 2^63), every op fsrr knows with any flags and modes. The trace is valid as far as the
// reader goes, so each one reaches prepare and the engine and is replayed for real, afap,
// into a target on /dev/shm, under RLIMIT_FSIZE and RLIMIT_NOFILE.
//
// A trace_error is a correct answer. A bug is anything else: another exception, a sanitizer
// report, an rss over -rss_limit_mb, a hang, or anything outside the target changed. After
// each replay the harness compares the sandbox outside the target (the canary directory, the
// trace) with how it was, and looks for the escape name in "/" and /dev/shm.
//
// Run: tests/fuzz/run.sh engine [SECONDS].
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fuzzer/FuzzedDataProvider.h>

#include "ops.h"
#include "replay.h"
#include "trace_error.h"
#include "trace_reader.h"
#include "trace_writer.h"

using namespace fsrr;
namespace fs = std::filesystem;

namespace {

constexpr const char* escape_name = "fsrr-engine-fuzz-escape";

// /dev/shm/fsrr-engine-fuzz.PID: target/ (emptied after each input), canary/, the trace.
struct sandbox {
  std::string dir, target, canary, trace;
  std::string before;  // the state outside the target, as listed by outside()

  sandbox() {
    dir = fmt::format("/dev/shm/fsrr-engine-fuzz.{}", ::getpid());
    target = dir + "/target";
    canary = dir + "/canary";
    trace = dir + "/input.trace";
    fs::remove_all(dir);
    fs::create_directories(target);
    fs::create_directories(canary + "/d");
    write_file(canary + "/c", "the canary: replay must never change this\n");
    write_file(canary + "/d/e", "nor this\n");
    fs::create_symlink("c", canary + "/l");
  }
  ~sandbox() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }

  static void write_file(const std::string& p, const std::string& s) {
    FILE* f = std::fopen(p.c_str(), "w");
    if (!f || std::fwrite(s.data(), 1, s.size(), f) != s.size() || std::fclose(f) != 0) std::abort();
  }

  // Every name under dir but the target and the trace, with type, mode, owner, size, mtime
  // and content or link target: what a replay escaping its target would change.
  std::string outside() const {
    std::string out;
    for (auto it = fs::recursive_directory_iterator(dir); it != fs::recursive_directory_iterator();
         ++it) {
      const std::string p = it->path();
      if (p == target || p == trace) {
        if (p == target) it.disable_recursion_pending();
        continue;
      }
      struct stat st;
      if (::lstat(p.c_str(), &st) != 0) std::abort();
      out += fmt::format("{} {:o} {}:{} {} {}.{}", p, st.st_mode, st.st_uid, st.st_gid, st.st_size,
                         st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
      if (S_ISLNK(st.st_mode)) out += " -> " + fs::read_symlink(p).string();
      if (S_ISREG(st.st_mode)) {
        FILE* f = std::fopen(p.c_str(), "r");
        char buf[256];
        const size_t n = f ? std::fread(buf, 1, sizeof buf, f) : 0;
        if (f) std::fclose(f);
        out += " " + std::string(buf, n);
      }
      out += "\n";
    }
    for (const char* where : {"/", "/dev/shm", "/dev/shm/..", "/tmp"})
      if (::access(fmt::format("{}/{}", where, escape_name).c_str(), F_OK) == 0)
        out += fmt::format("escaped into {}\n", where);
    return out;
  }

  // Empties the target without following anything in it; undoes chattr +i first.
  void clear() {
    std::error_code ec;
    fs::remove_all(target, ec);
    if (ec) {
      std::system(fmt::format("chattr -R -ia {} 2>/dev/null", target).c_str());
      fs::remove_all(target);
    }
    fs::create_directory(target);
  }
};

sandbox& box() {
  static sandbox* s = [] {
    struct rlimit fsize{64 << 20, 64 << 20};  // a write near 2^63 fails, it does not fill RAM
    struct rlimit files{512, 512};
    if (::setrlimit(RLIMIT_FSIZE, &fsize) != 0 || ::setrlimit(RLIMIT_NOFILE, &files) != 0)
      std::abort();
    ::signal(SIGXFSZ, SIG_IGN);
    auto* b = new sandbox;
    b->before = b->outside();
    std::atexit([] { delete s; });
    return b;
  }();
  return *s;
}

// The recipe's vocabulary. Paths are as the trace names them (absolute, below TARGET when
// replayed): escapes through '..', through symlinks the tree plants, names at NAME_MAX.
std::vector<std::string> paths(const sandbox& b) {
  const std::string long_name(255, 'n');
  return {"/",
          "/a",
          "/a/b",
          "/a/b/c",
          "/a/f",
          "/a/b/g",
          "/h",
          "/a/l",
          "/a/l/" + std::string(escape_name),
          "/up",
          "/up/" + std::string(escape_name),
          "/up/canary/c",
          "/abs",
          "/abs/" + std::string(escape_name),
          "/abs/canary/c",
          "/abs/canary/d",
          "/root",
          "/root/" + std::string(escape_name),
          "/cn",
          "/cn/c",
          "/cn/l",
          "/cn/" + std::string(escape_name),
          "/..",
          "/../" + std::string(escape_name),
          "/../canary/c",
          "/a/../../canary/d/e",
          "/a/./b",
          "/" + long_name,
          "/a/" + long_name,
          "/fifo",
          "/dev",
          "/a/b/c/d/e/f/g/h/i/j",
          b.dir + "/canary/c",  // absolute host paths, as a trace could name them
          b.target};
}

// Symlink targets the tree can plant at the symlink paths above.
std::vector<std::string> link_targets(const sandbox& b) {
  return {"..", "../..", "../../..", "/", b.dir, b.canary, "../canary", "c", "b", "/a", "."};
}

template <typename V>
const typename V::value_type& pick(FuzzedDataProvider& in, const V& v) {
  return v[in.ConsumeIntegralInRange<size_t>(0, v.size() - 1)];
}

uint64_t pick_size(FuzzedDataProvider& in) {
  switch (in.ConsumeIntegralInRange<int>(0, 9)) {
    case 0: return 0;
    case 1: return 1;
    case 2: return 4096;
    case 3: return 65536 + 17;
    case 4: return 1ull << 20;
    case 5: return 1ull << 34;
    case 6: return UINT64_MAX;
    case 7: return uint64_t(INT64_MAX);
    default: return in.ConsumeIntegralInRange<uint64_t>(0, 1 << 18);
  }
}

int64_t pick_offset(FuzzedDataProvider& in) {
  switch (in.ConsumeIntegralInRange<int>(0, 7)) {
    case 0: return 0;
    case 1: return 4095;
    case 2: return -1;
    case 3: return INT64_MAX;
    case 4: return (1ll << 62) + 3;
    case 5: return INT64_MIN;
    default: return in.ConsumeIntegralInRange<int64_t>(0, 1 << 20);
  }
}

uint32_t pick_flags(FuzzedDataProvider& in) {
  static const uint32_t common[] = {O_RDONLY,
                                    O_WRONLY | O_CREAT | O_TRUNC,
                                    O_RDWR | O_CREAT,
                                    O_WRONLY | O_CREAT | O_EXCL,
                                    O_RDONLY | O_DIRECTORY,
                                    O_WRONLY | O_APPEND,
                                    O_RDWR | O_TMPFILE,
                                    O_PATH | O_NOFOLLOW,
                                    O_WRONLY | O_DIRECT | O_CREAT,
                                    0};
  if (in.ConsumeBool()) return in.PickValueInArray(common);
  return in.ConsumeIntegral<uint32_t>();
}

// Writes the trace the input describes; returns false when the input is too short to say.
bool write_trace(FuzzedDataProvider& in, const sandbox& b) {
  const auto names = paths(b);
  const auto targets = link_targets(b);
  header_info h;
  h.writer = "engine_fuzz";
  h.kind = trace_kind::recording;
  writer_options wo;
  wo.overwrite = true;
  trace_writer w = or_throw(trace_writer::create(b.trace, h, wo));
  std::vector<path_id> ids;
  for (const auto& n : names) ids.push_back(w.intern_path(n));
  std::vector<file_id> files;
  for (uint64_t ino = 1; ino <= 6; ++ino)
    files.push_back(w.intern_file({1, ino, 0, ino == 1 ? uint32_t(S_IFDIR) : uint32_t(S_IFREG)}));

  const int entries = in.ConsumeIntegralInRange<int>(0, 12);
  for (int i = 0; i < entries; ++i) {
    tree_entry e;
    e.path = ids[in.ConsumeIntegralInRange<size_t>(0, ids.size() - 1)];
    static const uint32_t types[] = {S_IFDIR, S_IFREG, S_IFLNK, S_IFIFO, S_IFCHR, S_IFBLK, S_IFSOCK};
    e.mode = in.PickValueInArray(types) | (in.ConsumeIntegral<uint32_t>() & 07777);
    e.size = in.ConsumeBool() ? pick_size(in) : in.ConsumeIntegralInRange<uint64_t>(0, 8192);
    e.allocated = e.size;
    e.uid = in.ConsumeBool() ? 0 : in.ConsumeIntegral<uint32_t>();
    e.gid = in.ConsumeBool() ? 0 : in.ConsumeIntegral<uint32_t>();
    e.mtime_ns = in.ConsumeIntegral<int64_t>();
    if (S_ISLNK(e.mode)) e.target = w.intern_string(pick(in, targets));
    if (in.ConsumeBool()) e.file = files[in.ConsumeIntegralInRange<size_t>(0, files.size() - 1)];
    if (in.ConsumeIntegralInRange<int>(0, 3) == 0) {
      static const char* xn[] = {"user.a", "security.selinux", "trusted.x", "system.posix_acl_access"};
      e.xattrs.push_back({w.intern_string(in.PickValueInArray(xn)),
                          in.ConsumeIntegralInRange<uint32_t>(0, 70000)});
    }
    w.add_tree_entry(e);
  }

  // Threads: fd tables shared or not, so one fd number means different files in different lanes.
  const int threads = in.ConsumeIntegralInRange<int>(1, 4);
  std::vector<thread_id> lanes;
  for (int t = 0; t < threads; ++t)
    lanes.push_back(w.add_thread({100 + t, 100 + in.ConsumeIntegralInRange<int>(0, 1), 1,
                                  w.intern_string("fuzz"),
                                  uint32_t(in.ConsumeIntegralInRange<int>(1, 2))}));

  std::vector<int32_t> fds{AT_FDCWD, 0, 1, 3, 4, 5, 1000000, -1};
  uint64_t ts = 1000;
  const int events = in.ConsumeIntegralInRange<int>(0, 300);
  for (int i = 0; i < events && in.remaining_bytes() > 0; ++i) {
    event e;
    e.thread = lanes[in.ConsumeIntegralInRange<size_t>(0, lanes.size() - 1)];
    e.kind = static_cast<op>(in.ConsumeIntegralInRange<size_t>(0, op_count - 1));
    ts += in.ConsumeIntegralInRange<uint64_t>(0, 50'000);
    e.ts = ts;
    e.dur = in.ConsumeIntegralInRange<uint64_t>(0, 100'000);
    e.fd = pick(in, fds);
    e.fd2 = pick(in, fds);
    e.path = ids[in.ConsumeIntegralInRange<size_t>(0, ids.size() - 1)];
    e.path2 = in.ConsumeBool() ? no_id : ids[in.ConsumeIntegralInRange<size_t>(0, ids.size() - 1)];
    e.file = in.ConsumeBool() ? no_id : files[in.ConsumeIntegralInRange<size_t>(0, files.size() - 1)];
    e.file2 = in.ConsumeBool() ? no_id : files[in.ConsumeIntegralInRange<size_t>(0, files.size() - 1)];
    e.offset = pick_offset(in);
    e.offset2 = pick_offset(in);
    e.size = pick_size(in);
    e.flags = pick_flags(in);
    e.mode = in.ConsumeBool() ? 0644 : in.ConsumeIntegral<uint32_t>();
    e.aux = in.ConsumeBool() ? 0 : in.ConsumeIntegral<uint64_t>();
    switch (in.ConsumeIntegralInRange<int>(0, 4)) {
      case 0: e.result = 0; break;
      case 1: e.result = -in.ConsumeIntegralInRange<int>(1, 133); break;
      case 2: e.result = int64_t(e.size); break;
      case 3:  // a new fd, which later events may name
        e.result = in.ConsumeIntegralInRange<int>(3, 40);
        if (fds.size() < 32) fds.push_back(int32_t(e.result));
        break;
      default: e.result = in.ConsumeIntegral<int64_t>();
    }
    w.append(e);
  }
  w.finish();
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  sandbox& b = box();
  FuzzedDataProvider in(data, size);
  replay_options o;
  o.target = b.target;
  o.timing = "afap";
  o.data.kind = in.ConsumeBool() ? data_kind::random : data_kind::zero;
  o.issue_all = in.ConsumeBool();
  o.privilege.keep_privileged = in.ConsumeBool();
  o.privilege.owners = in.ConsumeBool();
  o.space_check = in.ConsumeBool();
  try {
    if (in.ConsumeIntegralInRange<int>(0, 3) == 0) {  // a --map destination inside the target
      fs::create_directory(b.target + "/mapped");
      o.maps = {or_throw(parse_map("/a=" + b.target + "/mapped"))};
      o.force = true;
    }
    write_trace(in, b);
    trace_reader r = or_throw(trace_reader::open(b.trace));
    (void)or_throw(run_replay(r, o));
  } catch (const trace_error& e) {
    if (std::getenv("ENGINE_FUZZ_VERBOSE")) std::fprintf(stderr, "trace_error: %s\n", e.what());
  }
  const std::string after = b.outside();
  if (after != b.before) {
    std::fprintf(stderr, "engine_fuzz: the replay changed what lies outside its target\nbefore:\n%s"
                 "after:\n%s", b.before.c_str(), after.c_str());
    std::abort();
  }
  b.clear();
  return 0;
}
