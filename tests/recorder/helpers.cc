#include "helpers.h"
#include "idle_decoder.h"
#include "trace_error.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <regex>
#include <stdexcept>

#include <catch2/catch.hpp>

namespace fsrr::test {

bool can_record() {
  const bool ci = [] {
    const char* v = std::getenv("CI");
    return v && std::string(v) == "true";
  }();
  std::string why;
  if (::geteuid() != 0)
    why = "not root";
  else if (::access("/sys/kernel/btf/vmlinux", R_OK) != 0)
    why = "no /sys/kernel/btf/vmlinux";
  if (why.empty()) return true;
  if (ci) FAIL("recording is impossible here (" << why << ") and CI=true: refusing to skip");
  WARN("skipped: recording needs root and kernel BTF (" << why << ")");
  return false;
}

bool can_idle() {
  if (recorder::may_leave_idle()) return true;
  const char* ci = std::getenv("CI");
  if (ci && std::string(ci) == "true")
    FAIL(
        "the idle decoder needs CAP_SYS_NICE, which this root lacks, and CI=true: refusing "
        "to skip");
  WARN("skipped: the idle decoder needs CAP_SYS_NICE");
  return false;
}

void write_file(const std::string& path, size_t bytes, char fill) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << std::string(bytes, fill);
}

int run(const std::vector<std::string>& argv, const std::string& out) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (!out.empty()) {
      const int fd = ::open(out.c_str(), O_CREAT | O_WRONLY | O_TRUNC, 0644);
      ::dup2(fd, 1);
    }
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execvp(args[0], args.data());
    ::_exit(127);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::string workload() {
  return FSRR_WORKLOAD;
}

recorder::record_result record(recorder::record_options o) {
  return or_throw(try_record(std::move(o)));
}

result<recorder::record_result> try_record(recorder::record_options o) {
  o.overwrite = true;
  return recorder::record(o);
}

trace::trace(const std::string& path) : reader(or_throw(trace_reader::open(path))) {
  auto s = reader.events();
  event e;
  while (s.next(e)) events.push_back(e);
  or_throw(s.status());
}

std::vector<const event*> trace::all(op o) const {
  std::vector<const event*> r;
  for (const auto& e : events)
    if (e.kind == o) r.push_back(&e);
  return r;
}

std::vector<const event*> trace::at(op o, const std::string& p) {
  std::vector<const event*> r;
  for (const auto& e : events)
    if (e.kind == o && path(e.path) == p) r.push_back(&e);
  return r;
}

const event& trace::one(op o, const std::string& p) {
  const auto r = at(o, p);
  INFO("op " << name(o) << " on " << p);
  REQUIRE(r.size() == 1);
  return *r.front();
}

const tree_entry* trace::tree_entry_at(const std::string& p) {
  // The reader hands entries out by value; keep the found one so the pointer stays valid.
  for (const tree_entry t : reader.tree())
    if (path(t.path) == p) return &found_entries.emplace_back(t);
  return nullptr;
}

std::map<std::string, uint64_t> trace::totals() {
  std::map<std::string, uint64_t> t;
  const trace_summary& s = reader.summary();
  for (size_t i = 0; i < op_count; ++i)
    if (s.op_counts[i]) t[std::string(name(static_cast<op>(i)))] += s.op_counts[i];
  for (const auto& [key, n] : s.nonfile) t[std::string(name(key.first))] += n;
  return t;
}

strace_counts strace(const std::vector<std::string>& argv, const std::string& log) {
  std::vector<std::string> cmd = {"strace", "-f", "-y", "-qq", "-o", log, "--"};
  cmd.insert(cmd.end(), argv.begin(), argv.end());
  REQUIRE(run(cmd) == 0);
  strace_counts c;
  static const std::regex call(R"(^\d+\s+([a-z0-9_]+)\((?:(\d+)<([^>]*)>)?)");
  std::ifstream in(log);
  std::string line;
  std::smatch m;
  while (std::getline(in, line)) {
    if (!std::regex_search(line, m, call)) continue;  // resumed calls, exits, signals
    const std::string name = m[1];
    ++c.all[name];
    if (m[2].matched) {
      const std::string target = m[3];
      const auto under = [&](const char* dir) { return target.rfind(dir, 0) == 0; };
      const bool storage =
          !(under("/dev/") && !under("/dev/shm/")) && !under("/proc/") && !under("/sys/");
      if (!target.empty() && target[0] == '/' && storage) ++c.on_files[name];
    }
  }
  return c;
}

}  // namespace fsrr::test
