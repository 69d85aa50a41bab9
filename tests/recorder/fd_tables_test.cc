// The decoder's fd tables when threads sharing one race on an fd number: a close releases the
// number as it enters and is sent as it exits, so another thread's open of the same number
// can be decoded first (restic's goroutines did it about one run in five under load).
#include <catch2/catch.hpp>

#include "fd_tables.h"

using fsrr::recorder::fd_entry;
using fsrr::recorder::fd_tables;

namespace {

constexpr uint64_t files = 0xffff888100000000;
constexpr uint64_t old_file = 0xffff888107b1ef00, new_file = 0xffff888107b1ec00;

fd_entry entry(uint64_t kfile, fsrr::path_id path) {
  fd_entry e;
  e.kfile = kfile;
  e.file = static_cast<fsrr::file_id>(path);
  e.path = path;
  return e;
}

}  // namespace

TEST_CASE("fd tables: a close decoded after an open reused its number ends the old binding") {
  fd_tables t;
  t.bind(files, 6, entry(old_file, 10));
  t.bind(files, 6, entry(new_file, 20));  // the open in another thread, decoded first
  REQUIRE(t.find(files, 6, old_file));
  CHECK(t.find(files, 6, old_file)->path == 10);  // the late close still names its file
  CHECK(t.find(files, 6, new_file)->path == 20);
  t.unbind(files, 6, old_file);  // the late close itself
  CHECK(t.find(files, 6, old_file) == nullptr);
  REQUIRE(t.find(files, 6));
  CHECK(t.find(files, 6)->path == 20);  // the new binding is untouched
  CHECK(t.find(files, 6, new_file)->path == 20);
}

TEST_CASE("fd tables: the old binding outlives the new one when the new is closed first") {
  fd_tables t;
  t.bind(files, 6, entry(old_file, 10));
  t.bind(files, 6, entry(new_file, 20));
  t.unbind(files, 6, new_file);
  CHECK(t.find(files, 6) == nullptr);
  REQUIRE(t.find(files, 6, old_file));
  CHECK(t.find(files, 6, old_file)->path == 10);
  t.unbind(files, 6, old_file);
  CHECK(t.find(files, 6, old_file) == nullptr);
}

TEST_CASE("fd tables: a file the table never held at the number is not found, and ends nothing") {
  fd_tables t;
  t.bind(files, 6, entry(new_file, 20));
  CHECK(t.find(files, 6, old_file) == nullptr);
  CHECK(t.find(files, 7, new_file) == nullptr);
  CHECK(t.find(files + 1, 6, new_file) == nullptr);
  t.unbind(files, 6, old_file);
  REQUIRE(t.find(files, 6));
  CHECK(t.find(files, 6)->path == 20);
  // rebinding the same file (a described fd sent again) displaces nothing
  t.bind(files, 6, entry(new_file, 20));
  t.unbind(files, 6, new_file);
  CHECK(t.find(files, 6, new_file) == nullptr);
  CHECK(t.find(files, 6) == nullptr);
}

TEST_CASE("fd tables: exec, close_range and a fork's copy forget displaced bindings") {
  fd_tables t;
  t.bind(files, 6, entry(old_file, 10));
  t.bind(files, 6, entry(new_file, 20));
  t.copy(files, files + 1);
  CHECK(t.find(files + 1, 6, old_file) == nullptr);  // the child was made after the close
  CHECK(t.find(files + 1, 6, new_file)->path == 20);
  t.unbind_range(files, 3, 10);
  CHECK(t.find(files, 6, old_file) == nullptr);
  CHECK(t.find(files, 6, new_file) == nullptr);
  t.bind(files, 6, entry(old_file, 10));
  t.bind(files, 6, entry(new_file, 20));
  t.exec(files);  // neither is close-on-exec: the current binding stays
  CHECK(t.find(files, 6, old_file) == nullptr);
  CHECK(t.find(files, 6, new_file)->path == 20);
}
