// import strace on logs written here: what a hostile or garbled log line becomes.
#include <fstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "strace_import.h"
#include "temp_dir.h"
#include "trace_error.h"
#include "trace_reader.h"

using namespace fsrr;

namespace {

// The paths of the imported events, in order ("" for an event without one).
std::vector<std::string> event_paths(const std::string& trace) {
  trace_reader r = or_throw(trace_reader::open(trace));
  std::vector<std::string> paths;
  auto events = r.events();
  for (event e; events.next(e);) paths.push_back(e.path ? r.path_string(e.path) : "");
  or_throw(events.status());
  return paths;
}

}  // namespace

TEST_CASE("a NUL inside a logged path ends the path there, as the kernel read it") {
  test::temp_dir tmp;
  std::ofstream(tmp / "log") << "100 1700000000.000001 openat(AT_FDCWD, \"/src/a\\0/../../etc\", "
                                "O_RDONLY) = 3 <0.000010>\n"
                                "100 1700000000.000002 mkdir(\"/dst\\0x\", 0755) = 0 <0.000010>\n"
                                "100 1700000000.000003 unlink(\"rel\\0/x\") = 0 <0.000010>\n";
  const auto r = transform::import_strace(tmp / "log", tmp / "out.trace", false);
  REQUIRE(r.has_value());
  CHECK(r->events == 3);
  CHECK(event_paths(tmp / "out.trace") == std::vector<std::string>{"/src/a", "/dst", "/rel"});
}
