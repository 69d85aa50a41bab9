// Real copy programs, recorded: per syscall, as many calls as `strace -f` counts on the same
// command and tree. Reads and writes on pipes and sockets depend on timing (how much each
// read finds), so for data calls only those on files are compared.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <set>

#include <catch2/catch.hpp>

#include "helpers.h"

using namespace fsrr;

namespace {

// A small tree shaped like the seed (many 1 KiB files, fewer larger ones), a subdirectory,
// a symlink and a hard link.
void make_tree(const std::string& src) {
  ::mkdir(src.c_str(), 0755);
  ::mkdir((src + "/sub").c_str(), 0750);
  for (int i = 0; i < 60; ++i)
    test::write_file(src + "/1K#" + std::to_string(i), 1024, 'a' + i % 26);
  for (int i = 0; i < 15; ++i) test::write_file(src + "/4K#" + std::to_string(i), 4096);
  for (int i = 0; i < 5; ++i) test::write_file(src + "/sub/10K#" + std::to_string(i), 10240);
  test::write_file(src + "/1000K", 1024000);
  REQUIRE(::symlink("sub/10K#0", (src + "/link").c_str()) == 0);
  REQUIRE(::link((src + "/4K#0").c_str(), (src + "/hard").c_str()) == 0);
}

uint64_t get(const std::map<std::string, uint64_t>& m, const std::string& k) {
  const auto it = m.find(k);
  return it == m.end() ? 0 : it->second;
}

bool data_op(op o) {
  const op_class c = info(o).cls;
  return c == op_class::read || c == op_class::write || c == op_class::copy;
}

struct counts {
  std::map<std::string, uint64_t> fsrr, strace;
};

// One recording and one strace of `cmd`, each on a fresh copy of the tree.
counts record_and_strace(const test::temp_dir& tmp, const std::vector<std::string>& cmd,
                         const std::string& reset) {
  const auto clean = [&] { REQUIRE(test::run({"sh", "-c", reset}) == 0); };
  REQUIRE(::chdir(tmp.path().c_str()) == 0);
  clean();
  recorder::record_options o;
  o.output = tmp / "copy.trace";
  o.command = cmd;
  const auto res = test::record(o);
  REQUIRE(res.exit_status == 0);
  REQUIRE(res.lost == 0);
  CHECK(res.unresolved == 0);
  clean();
  const test::strace_counts s = test::strace(cmd, tmp / "strace.log");
  REQUIRE(::chdir("/") == 0);

  test::trace t(o.output);
  const auto totals = t.totals();
  const trace_summary& sum = t.reader.summary();
  counts c;
  for (size_t i = 0; i < op_count; ++i) {
    const op o = static_cast<op>(i);
    if (o == op::exit || o == op::fd_bind || info(o).cls == op_class::stream)
      continue;  // not syscalls (a stream op is a read or write also counted as non-file)
    const std::string n(name(o));
    c.fsrr[n] = data_op(o) ? sum.op_counts[i] : get(totals, n);
    c.strace[n] = data_op(o) ? get(s.on_files, n) : get(s.all, n);
  }
  return c;
}

// Records `cmd` and straces it; per syscall, the counts must be equal. A program's own
// timing can change a few of its counts from run to run (rsync touches up directory times
// a varying number of times), so up to three pairs of runs are made, and each syscall's
// counts must agree in one of them.
void compare_with_strace(const std::vector<std::string>& cmd, const std::string& reset) {
  test::temp_dir tmp;
  make_tree(tmp / "src");
  std::map<std::string, std::vector<std::pair<uint64_t, uint64_t>>> seen;
  std::set<std::string> unmatched;
  for (int attempt = 0; attempt < 3; ++attempt) {
    const counts c = record_and_strace(tmp, cmd, reset);
    unmatched.clear();
    for (const auto& [n, ours] : c.fsrr) {
      const uint64_t theirs = c.strace.at(n);
      seen[n].emplace_back(ours, theirs);
      bool matched = false;
      for (const auto& [a, b] : seen[n]) matched = matched || a == b;
      if (!matched) unmatched.insert(n);
    }
    if (unmatched.empty()) break;
  }
  size_t compared = 0;
  for (const auto& [n, runs] : seen) {
    INFO(n << " (fsrr, strace) per attempt: " << ::Catch::Detail::stringify(runs));
    CHECK(unmatched.count(n) == 0);
    compared += runs.front().second ? 1 : 0;
  }
  CHECK(compared >= 8);
}

}  // namespace

TEST_CASE("cp -a: per-syscall counts match strace", "[recorder][programs]") {
  REQUIRE_RECORDING();
  compare_with_strace({"cp", "-a", "src", "dst"}, "rm -rf dst");
}

TEST_CASE("rsync -aAHX: per-syscall counts match strace", "[recorder][programs]") {
  REQUIRE_RECORDING();
  compare_with_strace({"rsync", "-aAHX", "src/", "dst/"}, "rm -rf dst");
}

TEST_CASE("tar c | tar x: per-syscall counts match strace", "[recorder][programs]") {
  REQUIRE_RECORDING();
  compare_with_strace({"sh", "-c", "tar cf - -C src . | tar xf - -C dst"},
                      "rm -rf dst && mkdir dst");
}

TEST_CASE("dd oflag=sync: per-syscall counts match strace", "[recorder][programs]") {
  REQUIRE_RECORDING();
  compare_with_strace({"dd", "if=src/1000K", "of=dd.out", "bs=4k", "oflag=sync", "status=none"},
                      "rm -f dd.out");
}

TEST_CASE("cp -a: the copy reads the source files, all of them in the initial tree",
          "[recorder][programs]") {
  REQUIRE_RECORDING();
  test::temp_dir tmp;
  make_tree(tmp / "src");
  char real[PATH_MAX];
  REQUIRE(::realpath(tmp.path().c_str(), real));
  const std::string d = real;
  recorder::record_options o;
  o.output = tmp / "cp.trace";
  o.command = {"cp", "-a", d + "/src", d + "/dst"};
  REQUIRE(test::record(o).exit_status == 0);
  test::trace t(o.output);
  const tree_entry* big = t.tree_entry_at(d + "/src/1000K");
  REQUIRE(big != nullptr);
  CHECK(big->size == 1024000);
  const tree_entry* link = t.tree_entry_at(d + "/src/link");
  REQUIRE(link != nullptr);
  CHECK(S_ISLNK(link->mode));
  CHECK(t.reader.string(link->target) == "sub/10K#0");
  const tree_entry* hard = t.tree_entry_at(d + "/src/hard");
  const tree_entry* first = t.tree_entry_at(d + "/src/4K#0");
  REQUIRE((hard && first));
  CHECK((hard->link_group != 0 && hard->link_group == first->link_group));
  CHECK(t.tree_entry_at(d + "/dst") == nullptr);
  CHECK(t.tree_entry_at(d + "/dst/1000K") == nullptr);
  size_t sources = 0;
  for (const auto& e : t.reader.tree())
    if (t.path(e.path).rfind(d + "/src/", 0) == 0) ++sources;
  CHECK(sources == 60 + 15 + 1 + 5 + 3);  // files, sub, link, hard
  // every byte of the sources was copied
  CHECK(t.reader.summary().bytes_written >= 60 * 1024 + 15 * 4096 + 5 * 10240 + 1024000);
}
