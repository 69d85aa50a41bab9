// Recording where production runs: in a chroot, in mount and pid namespaces, a process of
// another namespace followed with --pid, two chroots at once with --all. The trace holds the
// paths each process sees and both views of its pids, and replays and verifies.
//
// Each chroot is a bind_root (tests/common): bind mounts of this machine's /usr and /etc in a
// mount namespace private to the test process.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <iterator>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <tuple>

#include <fmt/format.h>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "bind_root.h"
#include "e2e.h"
#include "temp_dir.h"
#include "tree_fixture.h"

using namespace fsrr::test;

namespace {

// An event as recordings of one workload in different places are compared: op, its paths
// relative to the workload's data directory, result.
using signature = std::tuple<std::string, std::string, std::string, int64_t>;

struct recorded {
  std::multiset<signature> on_data;            // events naming paths below the data directory
  std::map<std::string, uint64_t> op_counts;   // per op, events of the workload's processes
  std::set<uint32_t> roots;                    // roots the data paths belong to
  std::vector<nlohmann::json> events;
};

// What one side has that the other has not, for a failure message.
std::string difference(const std::multiset<signature>& a, const std::multiset<signature>& b) {
  std::string out;
  const auto show = [&](const std::multiset<signature>& x, const std::multiset<signature>& y,
                        const char* side) {
    std::multiset<signature> only;
    std::set_difference(x.begin(), x.end(), y.begin(), y.end(), std::inserter(only, only.end()));
    for (const auto& [op, p1, p2, res] : only)
      out += fmt::format("{} only: {} {} {} = {}\n", side, op, p1, p2, res);
  };
  show(a, b, "first");
  show(b, a, "second");
  return out;
}

std::string difference(const std::map<std::string, uint64_t>& a,
                       const std::map<std::string, uint64_t>& b) {
  std::string out;
  std::set<std::string> ops;
  for (const auto& [op, n] : a) ops.insert(op);
  for (const auto& [op, n] : b) ops.insert(op);
  for (const auto& op : ops) {
    const uint64_t x = a.count(op) ? a.at(op) : 0, y = b.count(op) ? b.at(op) : 0;
    if (x != y) out += fmt::format("{}: {} vs {}\n", op, x, y);
  }
  return out;
}

// rsync writes each file to a temporary name, ".NAME.XXXXXX": the same in every recording.
std::string without_temp_suffix(std::string path) {
  static const std::regex temp(R"((^|/)(\.[^/]+)\.[A-Za-z0-9]{6}$)");
  return std::regex_replace(path, temp, "$1$2.XXXXXX");
}

std::string relative(const std::string& path, const std::string& data) {
  if (path == data) return ".";
  if (path.compare(0, data.size() + 1, data + "/") == 0) return path.substr(data.size() + 1);
  return {};
}

// `data`: the data directory as the workload names it; `comm`: the workload's program name.
recorded read_trace(const std::string& trace, const std::string& data, const std::string& comm,
                    const std::string& scratch) {
  REQUIRE(run(fmt::format("{} dump {} --json >{}", FSRR_BIN, trace, scratch)) == 0);
  recorded r;
  std::ifstream in(scratch);
  for (std::string line; std::getline(in, line);) {
    auto e = nlohmann::json::parse(line);
    const std::string op = e["op"];
    // how a pipe's bytes are split into reads depends on timing: stream ops vary by run
    const bool varies = op.rfind("stream_", 0) == 0;
    if (e.value("comm", "") == comm && op != "fd_bind" && !varies) ++r.op_counts[op];
    const std::string p1 = without_temp_suffix(relative(e.value("path", ""), data));
    const std::string p2 = without_temp_suffix(relative(e.value("path2", ""), data));
    if (!p1.empty() || !p2.empty()) {
      int64_t result = e["result"];
      if (result > 0 && (op.find("open") == 0 || op == "creat")) result = 1;  // fd numbers vary
      r.on_data.insert({op, p1, p2, result});
      r.roots.insert(e.value("path_root", 1u));
    }
    r.events.push_back(std::move(e));
  }
  return r;
}

// Replays `trace` into a fresh target: no mismatch, and verify finds the end state.
void replays_and_verifies(const std::string& trace, const temp_dir& work, const std::string& tag) {
  temp_dir target("/dev/shm");
  const std::string report = work / (tag + ".json");
  const int status = run(fmt::format("{} replay {} {} --timing afap --no-progress --report {} >{} 2>&1",
                                     FSRR_BIN, trace, target.path(), report, report + ".out"));
  INFO(tag << " replay: " << slurp(report + ".out"));
  REQUIRE(status == 0);
  const auto rep = nlohmann::json::parse(slurp(report));
  CHECK(rep["mismatches"] == 0);
  const int v = run(fmt::format("{} verify {} {} >{} 2>&1", FSRR_BIN, trace, target.path(),
                                work / (tag + ".verify")));
  INFO(tag << " verify: " << slurp(work / (tag + ".verify")));
  CHECK(v == 0);
}

nlohmann::json info_of(const std::string& trace, const std::string& scratch) {
  REQUIRE(run(fmt::format("{} info {} --json >{}", FSRR_BIN, trace, scratch)) == 0);
  return nlohmann::json::parse(slurp(scratch));
}

// The workloads, run in their data directory: names relative to it, so that how deep it lies
// changes nothing (rsync opens each directory of an absolute destination).
struct workload {
  const char* comm;
  std::string command;
};
const workload workloads[] = {
    {"fsrr_workload", fmt::format("{} ops ops", FSRR_WORKLOAD)},
    {"cp", "cp -a data cp-copy"},
    {"rsync", "rsync -aAHX data/ rsync-copy"},
    {"tar", "mkdir tar-copy && tar -C data -cf - . | tar -C tar-copy -xf -"},
};


// The tree each workload starts from, in `dir` (the data directory, made if need be).
void lay_out(const std::string& dir) {
  REQUIRE(run("mkdir -p " + dir) == 0);
  build_tree_fixture(dir);  // dir/data: files of several sizes, links, a fifo, xattrs
  // Times well in the past: rsync sets a copy's times only when they differ from the
  // source's, which a source made within the same second may not.
  REQUIRE(run(fmt::format("find {}/data -exec touch -h -d 2020-01-01 {{}} +", dir)) == 0);
  REQUIRE(::mkdir((dir + "/ops").c_str(), 0755) == 0);
  write_file(dir + "/ops/pre.txt", 1000);
}

}  // namespace

TEST_CASE("a chroot's programs are recorded with the paths they see, alike from outside, "
          "from the host and from inside",
          "[namespaces]") {
  if (!can_record()) return;
  temp_dir tmp("/dev/shm");
  bind_root root(tmp / "root", {BUILD_DIR});
  for (const workload& w : workloads) {
    SECTION(w.comm) {
      // the same tree, once on the host and once in the chroot's /data
      // rsync opens each directory above its working directory: the same depth everywhere
      const std::string host_data = tmp / "host";
      std::string deep = "/data";
      for (size_t n = std::count(host_data.begin(), host_data.end(), '/'); n > 2; --n) deep += "/d";
      const std::string wrap_data = deep + "/wrap", inside_data = deep + "/inside";
      lay_out(host_data);
      lay_out(root / wrap_data);
      // 1. on the host; 2. `fsrr record -- chroot ROOT sh -c ...`; 3. fsrr itself in the chroot
      // The workload writes to /dev/null, not to the log file, which only some see.
      const auto quiet = [&](const std::string& data) {
        return "sh -c 'cd " + data + " && (" + w.command + ") >/dev/null 2>&1'";
      };
      REQUIRE(run(fmt::format("{} record -o {} -- {} 2>{}", FSRR_BIN, tmp / "host.trace",
                              quiet(host_data), tmp / "host.log")) == 0);
      REQUIRE(run(fmt::format("{} record -o {} -- chroot {} {} 2>{}", FSRR_BIN,
                              tmp / "wrap.trace", root.path(), quiet(wrap_data),
                              tmp / "wrap.log")) == 0);
      lay_out(root / inside_data);
      INFO(slurp(tmp / "wrap.log"));
      REQUIRE(run(fmt::format("chroot {} {} record -o /tmp/inside.trace -- {} 2>{}", root.path(),
                              FSRR_BIN, quiet(inside_data), tmp / "inside.log")) == 0);
      INFO(slurp(tmp / "inside.log"));
      const auto host = read_trace(tmp / "host.trace", host_data, w.comm, tmp / "host.jsonl");
      const auto wrap = read_trace(tmp / "wrap.trace", wrap_data, w.comm, tmp / "wrap.jsonl");
      const auto inside =
          read_trace(root / "tmp/inside.trace", inside_data, w.comm, tmp / "inside.jsonl");

      CHECK(host.on_data.size() >= 15);
      // paths as the process sees them: /data/... (empty: no difference)
      CHECK(difference(host.on_data, wrap.on_data) == "");
      CHECK(difference(host.on_data, inside.on_data) == "");
      CHECK(difference(host.op_counts, wrap.op_counts) == "");
      CHECK(difference(host.op_counts, inside.op_counts) == "");
      // from the host, the chroot is a root of its own; from inside, the only one
      CHECK(info_of(tmp / "wrap.trace", tmp / "wrap.info")["roots"].size() == 2);
      CHECK(wrap.roots == std::set<uint32_t>{2});
      CHECK(info_of(tmp / "wrap.trace", tmp / "wrap.info")["roots"][1]["where"] == root.path());
      CHECK(info_of(root / "tmp/inside.trace", tmp / "inside.info")["roots"].size() == 1);
      for (const char* t : {"host", "wrap"}) CHECK(slurp(tmp / t + std::string(".log")).find("unresolved") == std::string::npos);
      replays_and_verifies(tmp / "host.trace", tmp, "host");
      replays_and_verifies(tmp / "wrap.trace", tmp, "wrap");
      replays_and_verifies(root / "tmp/inside.trace", tmp, "inside");
    }
  }
}

TEST_CASE("unshare --mount with a private tmpfs over a directory: paths as seen in the new "
          "namespace, a root of their own, replayed and verified",
          "[namespaces]") {
  if (!can_record()) return;
  temp_dir tmp("/dev/shm");
  lay_out(tmp / "w");
  REQUIRE(::mkdir((tmp / "w/over").c_str(), 0755) == 0);
  write_file(tmp / "w/over/hidden", 100);  // covered by the tmpfs: the workload never sees it
  // a tar into a tmpfs mounted in the new namespace only, then cp -a within it (a copy
  // across file systems meets EXDEV, which a replay into one TARGET would not)
  const std::string script = fmt::format(
      "mount -t tmpfs none {0}/over && cd {0}/over && mkdir src && "
      "tar -C ../data -cf - . | tar -C src -xf - && cp -a src copy && ls >/dev/null",
      tmp / "w");
  REQUIRE(run(fmt::format("{} record -o {} -- unshare --mount --propagation private sh -c '{}' 2>{}",
                          FSRR_BIN, tmp / "t.trace", script, tmp / "log")) == 0);
  INFO(slurp(tmp / "log"));
  const auto t = read_trace(tmp / "t.trace", tmp / "w", "cp", tmp / "t.jsonl");
  const auto info = info_of(tmp / "t.trace", tmp / "t.info");
  CHECK(info["complete"] == true);
  REQUIRE(info["roots"].size() == 2);  // unshare's own exec, and the new mount namespace
  CHECK(info["roots"][0]["mnt_ns"] != info["roots"][1]["mnt_ns"]);
  CHECK(t.roots == std::set<uint32_t>{2});
  // cp wrote beneath the private tmpfs, under the names it used
  CHECK(t.on_data.count({"mkdirat", "over/copy", "", 0}) == 1);
  CHECK(t.on_data.count({"openat", "over/copy/one", "", 1}) == 1);
  CHECK(t.on_data.count({"openat", "over/src/one", "", 1}) == 2);  // tar made it, cp read it
  // the covered file is not in the initial tree: the namespace never showed it
  CHECK(slurp(tmp / "t.jsonl").find("hidden") == std::string::npos);
  CHECK(::access((tmp / "w/over/copy").c_str(), F_OK) != 0);  // the host never saw the copy
  replays_and_verifies(tmp / "t.trace", tmp, "replay");
}

TEST_CASE("unshare --mount --pid --fork: the trace has the pids the processes saw and fsrr's",
          "[namespaces]") {
  if (!can_record()) return;
  temp_dir tmp("/dev/shm");
  lay_out(tmp / "w");
  // ("&& true": sh would exec a last command itself instead of forking for it)
  REQUIRE(run(fmt::format("{} record -o {} -- unshare --mount --pid --fork sh -c "
                          "'cd {} && cp -a data copy && true' 2>{}",
                          FSRR_BIN, tmp / "t.trace", tmp / "w", tmp / "log")) == 0);
  INFO(slurp(tmp / "log"));
  const auto t = read_trace(tmp / "t.trace", tmp / "w", "cp", tmp / "t.jsonl");
  // pid as the process saw it -> as fsrr saw it, and cp's own
  std::map<int64_t, int64_t> host_of;
  int64_t cp_pid = 0;
  for (const auto& e : t.events) {
    host_of[e["pid"]] = e.value("host_pid", e["pid"].get<int64_t>());
    if (e["comm"] == "cp") cp_pid = e["pid"];
  }
  // unshare's child (then sh) is the namespace's init, cp its child; the host numbers them
  // otherwise, and unshare itself, born in fsrr's namespace, alike
  REQUIRE(host_of.count(1));
  CHECK(host_of[1] > 2);
  CHECK(cp_pid == 2);
  CHECK(host_of[2] > 2);
  CHECK(host_of.size() == 3);
  for (const auto& [pid, host] : host_of)
    if (pid > 2) CHECK(host == pid);
  CHECK(t.on_data.count({"mkdirat", "copy", "", 0}) == 1);
  replays_and_verifies(tmp / "t.trace", tmp, "replay");
}

TEST_CASE("record --pid from the host follows a process in other mount and pid namespaces",
          "[namespaces]") {
  if (!can_record()) return;
  temp_dir tmp("/dev/shm");
  REQUIRE(::mkdir((tmp / "w").c_str(), 0755) == 0);
  // The process waits for a file, then writes ten files and ends.
  const std::string script = fmt::format(
      "cd {} && while [ ! -e go ]; do sleep 0.01; done && "
      "for i in 0 1 2 3 4 5 6 7 8 9; do echo $i > f$i; done",
      tmp / "w");
  const pid_t child = ::fork();
  if (child == 0) {
    ::execlp("unshare", "unshare", "--mount", "--pid", "--fork", "sh", "-c", script.c_str(),
             nullptr);
    ::_exit(127);
  }
  // the namespace's sh, as the host numbers it
  pid_t inner = 0;
  for (int i = 0; i < 500 && !inner; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    std::ifstream kids(fmt::format("/proc/{}/task/{}/children", child, child));
    kids >> inner;
  }
  REQUIRE(inner > 0);
  const pid_t rec = ::fork();
  if (rec == 0) {
    const std::string out = tmp / "t.trace", log = tmp / "log", pid = std::to_string(inner);
    const int fd = ::open(log.c_str(), O_CREAT | O_WRONLY | O_TRUNC, 0644);
    ::dup2(fd, 2);
    ::execl(FSRR_BIN, FSRR_BIN, "record", "-o", out.c_str(), "--pid", pid.c_str(), nullptr);
    ::_exit(127);
  }
  // fsrr says when it is attached
  for (int i = 0; i < 3000 && slurp(tmp / "log").find("record: recording") == std::string::npos; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  write_file(tmp / "w/go", 0);
  int status = 0;
  ::waitpid(child, &status, 0);
  ::waitpid(rec, &status, 0);  // it stops once the process is gone
  INFO(slurp(tmp / "log"));
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  const auto t = read_trace(tmp / "t.trace", tmp / "w", "sh", tmp / "t.jsonl");
  for (int i = 0; i < 10; ++i) CHECK(t.on_data.count({"openat", fmt::format("f{}", i), "", 1}) == 1);
  bool seen = false;
  for (const auto& e : t.events)
    if (e.value("host_pid", 0) == inner) {
      seen = true;
      CHECK(e["pid"] == 1);  // the process sees itself as its namespace's init
    }
  CHECK(seen);
}

TEST_CASE("record --all keeps two chroots that use the same names apart", "[namespaces]") {
  if (!can_record()) return;
  temp_dir tmp("/dev/shm");
  bind_root a(tmp / "a"), b(tmp / "b");
  recorded t;
  {
    const pid_t rec = ::fork();
    if (rec == 0) {
      const std::string out = tmp / "t.trace", log = tmp / "log";
      const int fd = ::open(log.c_str(), O_CREAT | O_WRONLY | O_TRUNC, 0644);
      ::dup2(fd, 2);
      // The whole machine is recorded, tests running beside this one included: a ring of
      // 64 MiB, not 16, leaves their bursts more room before it fills.
      ::execl(FSRR_BIN, FSRR_BIN, "record", "-o", out.c_str(), "--all", "--ring-buffer", "64M",
              nullptr);
      ::_exit(127);
    }
    for (int i = 0; i < 3000 && slurp(tmp / "log").find("record: recording") == std::string::npos; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));  // until fsrr says it is attached
    // The same names in both: /data/two-roots, 100 bytes in a, 200 in b. (--all records the
    // whole machine, so other tests' chroots too: their names are not this one.)
    const char* write = "chroot {} sh -c 'head -c {} /dev/zero > /data/two-roots'";
    REQUIRE(run(fmt::format(fmt::runtime(write), a.path(), 100)) == 0);
    REQUIRE(run(fmt::format(fmt::runtime(write), b.path(), 200)) == 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    ::kill(rec, SIGINT);
    int status = 0;
    ::waitpid(rec, &status, 0);
    INFO(slurp(tmp / "log"));
    REQUIRE(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
    t = read_trace(tmp / "t.trace", "/data/two-roots", "sh", tmp / "t.jsonl");
  }
  INFO(slurp(tmp / "log"));  // what the recorder said (events lost?), for any check below
  // one open of /data/two-roots in each root, each with its own writes
  std::map<uint64_t, uint64_t> written;  // root -> bytes written to /data/two-roots
  uint64_t opens = 0;
  for (const auto& e : t.events)
    if (e.value("path", "") == "/data/two-roots" && e["op"] == "openat") ++opens;
  CHECK(opens == 2);
  CHECK(t.roots.size() == 2);
  const auto info = info_of(tmp / "t.trace", tmp / "t.info");
  std::set<std::string> where;
  for (const auto& r : info["roots"]) where.insert(r["where"]);
  CHECK(where.count(a.path()) == 1);
  CHECK(where.count(b.path()) == 1);
  // replayed, each /data/two-roots lands in its root's directory with its own size; sliced to
  // those files first, since --all also recorded whatever else the machine did meanwhile
  std::string paths;
  for (const auto& r : info["roots"])
    if (r["where"] == a.path() || r["where"] == b.path())
      paths += fmt::format(" --path /{}/data/two-roots", r["placed_at"].get<std::string>());
  REQUIRE(run(fmt::format("{} slice {} -o {}{} >{} 2>&1", FSRR_BIN, tmp / "t.trace",
                          tmp / "two.trace", paths, tmp / "slice.log")) == 0);
  temp_dir target("/dev/shm");
  const int replayed =
      run(fmt::format("{} replay {} {} --timing afap --no-progress >{} 2>&1", FSRR_BIN,
                      tmp / "two.trace", target.path(), tmp / "replay.log"));
  INFO(slurp(tmp / "replay.log"));
  REQUIRE(replayed == 0);
  std::set<off_t> sizes;
  for (const auto& r : info["roots"]) {
    struct stat st;
    if (::stat(
            (target.path() + "/" + r["placed_at"].get<std::string>() + "/data/two-roots").c_str(),
            &st) == 0)
      sizes.insert(st.st_size);
  }
  CHECK(sizes == std::set<off_t>{100, 200});
}
