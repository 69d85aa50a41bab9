// The logged block device (lab/block_log.h): a real ext4 on a loop device over fsrr's FUSE
// file, its writes and flushes logged in order; states rebuilt from the log mount.
#include <catch2/catch.hpp>
#include <fcntl.h>
#include <unistd.h>

#include <fmt/format.h>

#include "block_log.h"
#include "loop_fs.h"
#include "temp_dir.h"

using fsrr::test::run;

namespace {

size_t flushes(const std::vector<fsrr::lab::block_record>& log, size_t to) {
  size_t n = 0;
  for (size_t i = 0; i < to; ++i) n += log[i].flush;
  return n;
}

// Mounts `image` read-only-recovered (a crash state) and says whether `file` holds `text`.
bool holds(const std::string& image, const std::string& at, const std::string& file,
           const std::string& text) {
  REQUIRE(run(fmt::format("mkdir -p {0} && mount -o loop {1} {0}", at, image)) == 0);
  const bool found =
      run(fmt::format("test \"$(cat {}/{} 2>/dev/null)\" = '{}'", at, file, text)) == 0;
  run(fmt::format("umount {}", at));
  return found;
}

}  // namespace

TEST_CASE("a file system on the logged device: every write and flush is logged, in order, and "
          "a state rebuilt up to a flush holds what was synced by then",
          "[lab][crash]") {
  if (!fsrr::test::require_root("a loop device over FUSE")) return;
  fsrr::test::temp_dir tmp("/dev/shm");
  const std::string image = tmp.path() + "/ext4.img", base = tmp.path() + "/base.img";
  REQUIRE(run(fmt::format("truncate -s 64M {0} && mkfs.ext4 -q -F {0}", image)) == 0);
  REQUIRE(fsrr::lab::copy_sparse(image, base).has_value());
  REQUIRE(run(fmt::format("mkdir {}/log {}/mnt", tmp.path(), tmp.path())) == 0);
  const std::string mnt = tmp.path() + "/mnt";
  uint64_t after_first = 0, after_second = 0;
  std::vector<fsrr::lab::block_record> log;
  std::string data;
  {
    auto dev = fsrr::lab::logged_device::make(image, tmp.path() + "/log");
    REQUIRE(dev.has_value());
    INFO((*dev)->device());
    REQUIRE((*dev)->device().rfind("/dev/loop", 0) == 0);
    REQUIRE(run(fmt::format("mount {} {}", (*dev)->device(), mnt)) == 0);
    CHECK(run(fmt::format("echo first > {0}/a && sync {0}/a", mnt)) == 0);
    after_first = (*dev)->logged();
    CHECK(run(fmt::format("echo second > {0}/b && sync {0}/b", mnt)) == 0);
    after_second = (*dev)->logged();
    CHECK(run(fmt::format("echo third > {}/c", mnt)) == 0);  // never synced
    CHECK(run(fmt::format("umount {}", mnt)) == 0);
    REQUIRE((*dev)->detach().has_value());
    auto records = (*dev)->records();
    REQUIRE(records.has_value());
    log = std::move(*records);
    data = (*dev)->data_path();
  }
  CHECK(after_first > 0);
  CHECK(after_second > after_first);
  REQUIRE(log.size() >= after_second);
  // each sync of a file on ext4 commits the journal: at least one flush each
  CHECK(flushes(log, after_first) >= 1);
  CHECK(flushes(log, after_second) > flushes(log, after_first));
  // The served image now holds everything: the base with the whole log applied equals it.
  {
    const std::string whole = tmp.path() + "/whole.img";
    REQUIRE(fsrr::lab::copy_sparse(base, whole).has_value());
    const int img = ::open(whole.c_str(), O_RDWR), dat = ::open(data.c_str(), O_RDONLY);
    REQUIRE(fsrr::lab::apply_records(img, dat, log, 0, log.size()).has_value());
    ::close(img);
    ::close(dat);
    CHECK(run(fmt::format("cmp -s {} {}", whole, image)) == 0);
  }
  // A power cut right after the first sync returned: the writes up to its last flush.
  size_t cut = after_first;
  while (cut > 0 && !log[cut - 1].flush) --cut;
  const std::string crashed = tmp.path() + "/crashed.img";
  REQUIRE(fsrr::lab::copy_sparse(base, crashed).has_value());
  const int img = ::open(crashed.c_str(), O_RDWR), dat = ::open(data.c_str(), O_RDONLY);
  REQUIRE(fsrr::lab::apply_records(img, dat, log, 0, cut).has_value());
  ::close(img);
  ::close(dat);
  CHECK(holds(crashed, tmp.path() + "/m1", "a", "first"));
  CHECK_FALSE(holds(crashed, tmp.path() + "/m2", "b", "second"));
  CHECK(run(fmt::format("e2fsck -fn {} >/dev/null 2>&1", crashed)) == 0);
}
