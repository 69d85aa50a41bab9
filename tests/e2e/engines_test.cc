// I/O that storage engines do without a syscall per operation, recorded request by request
// (page by page) and replayed: fio's io_uring engine in its modes (plain, registered files and
// fixed buffers, an SQPOLL kernel thread submitting), its libaio engine with O_DIRECT and its
// mmap engine; a liburing program of ours (linked fdatasync, vectored write to a registered
// file, reads into registered buffers, a write at the file's position, fallocate); Python's
// mmap module storing into a shared mapping. Each is recorded complete and replayed with the
// bytes it wrote, on tmpfs, ext4, xfs and btrfs, 0 mismatches, verified.
#include <sys/stat.h>

#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "e2e.h"
#include "event.h"
#include "temp_dir.h"

using namespace fsrr::test;

namespace {

// The replays' reports (record_and_replay leaves them in dir/FS.json): the bytes each wrote.
void replays_wrote(const std::string& dir, uint64_t bytes) {
  for (const char* fs : {"tmpfs", "ext4", "xfs", "btrfs"}) {
    const std::string report = dir + "/" + fs + ".json";
    if (std::string(fs) != "tmpfs" && slurp(report).empty()) continue;  // not root: tmpfs only
    INFO(fs);
    CHECK(nlohmann::json::parse(slurp(report))["bytes_written"].get<uint64_t>() == bytes);
  }
}

// Each replay's figures for one engine: every request went through it (none as a syscall),
// in at most `submits` calls, never more of them in flight than the recording had.
void replays_through(const std::string& dir, const char* engine, uint64_t requests,
                     uint64_t recorded_depth) {
  for (const char* fs : {"tmpfs", "ext4", "xfs", "btrfs"}) {
    const std::string report = dir + "/" + fs + ".json";
    if (std::string(fs) != "tmpfs" && slurp(report).empty()) continue;
    INFO(fs << " " << engine);
    const auto e = nlohmann::json::parse(slurp(report))["engines"][engine];
    CHECK(e["requests"] == requests);
    CHECK(e["as_syscalls"] == 0);
    CHECK(e["submits"].get<uint64_t>() >= 1);
    CHECK(e["submits"].get<uint64_t>() <= requests);
    CHECK(e["recorded_max_in_flight"].get<uint64_t>() <= recorded_depth);
    CHECK(e["max_in_flight"].get<uint64_t>() >= 1);
    CHECK(e["max_in_flight"].get<uint64_t>() <= e["recorded_max_in_flight"].get<uint64_t>());
  }
}

}  // namespace

TEST_CASE("fio's io_uring engine is recorded request by request and replays its bytes") {
  if (!can_record()) return;
  const char* modes[] = {"", "--registerfiles=1 --fixedbufs=1", "--sqthread_poll=1"};
  for (const char* mode : modes) {
    INFO("fio --ioengine=io_uring " << mode);
    temp_dir work("/dev/shm");
    // 2,048 writes of 4 KiB at random offsets, 8 in flight, an fsync after every 16
    const auto info = record_and_replay(
        work.path(),
        fmt::format("fio --name=u --filename=f --ioengine=io_uring --rw=randwrite --bs=4k "
                    "--size=8m --iodepth=8 --fsync=16 --randrepeat=1 {} --output=/dev/null",
                    mode),
        2048);
    CHECK(info["bytes_written"] == 8 << 20);
    CHECK(info["ops"]["pwrite64"] == 2048);
    // fio queues an fsync after 16 writes only when one is not already in flight: how many
    // it submits varies (41 to 1,005 seen, as the kernel's io_uring_submit_req counts them)
    CHECK(info["ops"]["fsync"].get<uint64_t>() >= 1);
    replays_wrote(work.path(), 8 << 20);
    // through a ring of the replay's own, at most 8 in flight as fio had
    replays_through(work.path(), "io_uring",
                    2048 + info["ops"]["fsync"].get<uint64_t>(), 8);
    // fixedbufs: every write from a buffer registered with the replay's ring, as fio's were
    const uint64_t fixed = std::string(mode).find("fixedbufs") != std::string::npos ? 2048 : 0;
    for (const char* fs : {"tmpfs", "ext4", "xfs", "btrfs"}) {
      const std::string report = work / fmt::format("{}.json", fs);
      if (std::string(fs) != "tmpfs" && slurp(report).empty()) continue;
      INFO(fs);
      CHECK(nlohmann::json::parse(slurp(report))["engines"]["io_uring"]["fixed_buffers"] == fixed);
    }
  }
}

TEST_CASE("fio's libaio engine with O_DIRECT is recorded iocb by iocb and replays its bytes") {
  if (!can_record()) return;
  temp_dir work("/dev/shm");
  // 2,048 writes of 4 KiB at random offsets, 32 in flight, reaped by io_getevents
  const auto info = record_and_replay(
      work.path(),
      "fio --name=a --filename=f --ioengine=libaio --direct=1 --rw=randwrite --bs=4k "
      "--size=8m --iodepth=32 --randrepeat=1 --output=/dev/null",
      2048);
  CHECK(info["bytes_written"] == 8 << 20);
  CHECK(info["ops"]["pwrite64"] == 2048);
  CHECK(info["ops"]["io_submit"].get<uint64_t>() >= 2048 / 32);
  CHECK(info["ops"]["io_getevents"].get<uint64_t>() >= 2048 / 32);
  replays_wrote(work.path(), 8 << 20);
  replays_through(work.path(), "aio", 2048, 32);  // through an AIO context, io_submit
}

TEST_CASE("a liburing program's linked, vectored, fixed-file and positioned requests replay") {
  if (!can_record()) return;
  temp_dir work("/dev/shm");
  const auto info = record_and_replay(work.path(), fmt::format("{} .", URING_WRITER), 20);
  CHECK(info["bytes_written"] == 16 * 4096 + 1000 + 3000 + 500 + 100 + 2 * 300);
  const auto& ops = info["ops"];
  CHECK(ops["pwrite64"] == 16);
  CHECK(ops["fdatasync"] == 4);
  CHECK(ops["pwritev"] == 1);  // to the registered `other`: its own fd, the same open file
  CHECK(ops["fd_bind"] == 1);  // `third`, whose fd was closed: the trace binds one of its own
  CHECK(ops["write"] == 4);    // at the files' positions: data, other, third twice
  CHECK(ops["fallocate"] == 1);
  replays_wrote(work.path(), 70736);
  // 16 writes, 4 fdatasyncs, a writev, 2 reads, 4 writes at positions, a fallocate: each
  // through a ring, the 4 chains of 4 writes and an fdatasync linked as they were
  replays_through(work.path(), "io_uring", 28, 28);
  REQUIRE(run(fmt::format("{} dump --json {}/t.trace >{}/dump.json", FSRR_BIN, work.path(),
                          work.path())) == 0);
  int linked = 0, fixed_files = 0, uring = 0;
  {
    std::ifstream in(work / "dump.json");
    for (std::string line; std::getline(in, line);) {
      const auto e = nlohmann::json::parse(line);
      if (e.value("engine", "") != "io_uring") continue;
      ++uring;
      linked += (e["sqe_flags"].get<int>() & 4) != 0;  // IOSQE_IO_LINK
      fixed_files += (e["sqe_flags"].get<int>() & 1) != 0;  // IOSQE_FIXED_FILE
    }
  }
  CHECK(uring == 28);
  CHECK(linked == 4);
  CHECK(fixed_files == 5);  // the writev, 100 bytes to `other`, 2 × 300 to `third`, fallocate
  // each write at a position went where the recorded one did (2000 in `other`, 0 and 300 in
  // `third`): the replay's content matches what the trace says was written where
  const int content = run(fmt::format(
      "mkdir {1}/again && {0} replay {1}/t.trace {1}/again --timing afap --data random --seed 3 "
      "--no-progress >/dev/null 2>&1 && {0} verify --content --data random --seed 3 "
      "{1}/t.trace {1}/again >{1}/content.log 2>&1",
      FSRR_BIN, work.path()));
  INFO(slurp(work / "content.log"));
  CHECK(content == 0);
  // and as the syscalls doing the same, one at a time: the same bytes where they were
  const int syscalls = run(fmt::format(
      "mkdir {1}/plain && {0} replay {1}/t.trace {1}/plain --timing afap --engines syscalls "
      "--data random --seed 3 --no-progress --report {1}/plain.json >/dev/null 2>&1 && "
      "{0} verify --content --data random --seed 3 {1}/t.trace {1}/plain "
      ">{1}/plain.log 2>&1",
      FSRR_BIN, work.path()));
  INFO(slurp(work / "plain.log"));
  CHECK(syscalls == 0);
  const auto plain = nlohmann::json::parse(slurp(work / "plain.json"));
  CHECK(plain["engines"]["io_uring"]["requests"] == 0);
  CHECK(plain["engines"]["io_uring"]["as_syscalls"] == 28);
  CHECK(plain["mismatches"] == 0);
}

// The pwrite64 events of writes through mappings: each on the fd the trace gives the file.
std::vector<std::pair<int64_t, uint64_t>> mapped_writes(const std::string& trace) {
  REQUIRE(run(fmt::format("{} dump --json {} >{}.json", FSRR_BIN, trace, trace)) == 0);
  std::vector<std::pair<int64_t, uint64_t>> out;
  std::ifstream in(trace + ".json");
  for (std::string line; std::getline(in, line);) {
    const auto e = nlohmann::json::parse(line);
    if (e.value("op", "") == "pwrite64" && e.value("fd", 0) >= ::fsrr::mapped_fd_base)
      out.emplace_back(e["offset"].get<int64_t>(), e["size"].get<uint64_t>());
  }
  return out;
}

TEST_CASE("Python's mmap stores replay as the pages they dirtied, its flush as an fdatasync") {
  if (!can_record()) return;
  temp_dir work("/dev/shm");
  const auto info =
      record_and_replay(work.path(), fmt::format("python3 {} .", MAPPED_WRITER), 20);
  // tmpfs has no writeback: page 0 stays dirty and writable, its second store does not fault
  using w = std::pair<int64_t, uint64_t>;
  CHECK(mapped_writes(work / "t.trace") ==
        std::vector<w>{{0, 4096}, {8192, 4096}, {20480, 100}});
  CHECK(info["ops"]["fdatasync"] == 1);  // flush(): msync(MS_SYNC) of the mapped file
  // each page stored through a mapping of the replayed file, on every file system
  for (const char* fs : {"tmpfs", "ext4", "xfs", "btrfs"}) {
    const std::string report = work / fmt::format("{}.json", fs);
    if (std::string(fs) != "tmpfs" && slurp(report).empty()) continue;
    INFO(fs);
    const auto mapped = nlohmann::json::parse(slurp(report))["engines"]["mapped"];
    CHECK(mapped["requests"] == 3);
    CHECK(mapped["as_syscalls"] == 0);
  }
  // --mmap-as-write: the same pages by pwrite, the same content
  const int as_write = run(fmt::format(
      "mkdir {1}/w && {0} replay {1}/t.trace {1}/w --timing afap --mmap-as-write --data random "
      "--seed 5 --no-progress --report {1}/w.json >/dev/null 2>&1 && {0} verify --content "
      "--data random --seed 5 {1}/t.trace {1}/w >{1}/w.log 2>&1",
      FSRR_BIN, work.path()));
  INFO(slurp(work / "w.log"));
  CHECK(as_write == 0);
  const auto w_report = nlohmann::json::parse(slurp(work / "w.json"));
  CHECK(w_report["engines"]["mapped"]["requests"] == 0);
  CHECK(w_report["engines"]["mapped"]["as_syscalls"] == 3);
  if (!require_root("an ext4 image")) return;
  // on ext4 the flush writes page 0 back and write-protects it: the last store faults again
  loop_fs ext4("ext4", 256);
  REQUIRE(run(fmt::format("cd {} && {} record -o {}/ext4.trace -- python3 {} {} >{}/ext4.log 2>&1",
                          ext4.path(), FSRR_BIN, work.path(), MAPPED_WRITER, ext4.path(),
                          work.path())) == 0);
  CHECK(mapped_writes(work / "ext4.trace") ==
        std::vector<w>{{0, 4096}, {8192, 4096}, {20480, 100}, {0, 4096}});
}

TEST_CASE("a shared mapping made writable by mprotect is followed from then on") {
  if (!can_record()) return;
  temp_dir work("/dev/shm");
  // mapped read-only, pages 1 and 2 made writable, a store in each, msync
  const auto info =
      record_and_replay(work.path(), fmt::format("python3 {} . mprotect", MAPPED_WRITER), 20);
  using w = std::pair<int64_t, uint64_t>;
  CHECK(mapped_writes(work / "t.trace") == std::vector<w>{{4096, 4096}, {8192, 4096}});
  CHECK(info["ops"]["fdatasync"] == 1);
  replays_wrote(work.path(), 8192);
}

TEST_CASE("fio's mmap engine is recorded page by page and replays its bytes") {
  if (!can_record()) return;
  temp_dir work("/dev/shm");
  // fio lays the 8 MiB file out with write(), then stores 2,048 random 4 KiB blocks through
  // its mapping, an msync after every 64
  const auto info = record_and_replay(
      work.path(),
      "fio --name=m --filename=f --ioengine=mmap --rw=randwrite --bs=4k --size=8m --fsync=64 "
      "--randrepeat=1 --output=/dev/null",
      2048);
  CHECK(mapped_writes(work / "t.trace").size() == 2048);
  CHECK(info["bytes_written"] == 16 << 20);
  replays_wrote(work.path(), 16 << 20);
}

TEST_CASE("io_uring requests on names are recorded as the syscalls doing the same") {
  if (!can_record()) return;
  temp_dir work("/dev/shm");
  // mkdirat, openat (O_CREAT), a write linked to an fsync linked to a close, statx,
  // renameat, linkat, symlinkat, unlinkat, an openat that fails, openat2 and close, an xattr
  // set and read by fd and by name: all through the ring, all relative to the cwd
  const auto info = record_and_replay(work.path(), fmt::format("{} . names", URING_WRITER), 40);
  CHECK(info["bytes_written"] == 70736 + 4096 + 100);  // + 100 through slot 1 once updated
  const auto& ops = info["ops"];
  CHECK(ops["mkdirat"] == 1);
  CHECK(ops["renameat2"] == 1);
  CHECK(ops["linkat"] == 1);
  CHECK(ops["symlinkat"] == 1);
  CHECK(ops["unlinkat"] == 1);
  CHECK(ops["openat2"] == 1);
  CHECK(ops["fsync"] == 1);
  CHECK(ops["fsetxattr"] == 1);
  CHECK(ops["setxattr"] == 1);
  CHECK(ops["fgetxattr"] == 1);
  CHECK(ops["getxattr"] == 1);
  REQUIRE(run(fmt::format("{0} dump {1}/t.trace >{1}/dump.txt", FSRR_BIN, work.path())) == 0);
  const std::string dump = slurp(work / "dump.txt");
  const std::string d = work.path() + "/d";
  for (const std::string& line :
       {fmt::format("mkdirat(\"{}\", 0755) = 0", d),
        fmt::format("renameat2(\"{0}/new\", \"{0}/renamed\", 0x0) = 0", d),
        fmt::format("linkat(\"{0}/renamed\", \"{0}/hard\", 0x0) = 0", d),
        fmt::format("symlinkat(\"{}/soft\", \"renamed\") = 0", d),
        fmt::format("unlinkat(\"{}/hard\", 0x0) = 0", d),
        fmt::format("openat(\"{}/missing\", O_RDONLY|0x8000, 0) = -1 ENOENT", d),
        fmt::format("setxattr(\"{}/renamed\", \"user.other\", 3, 0x0, 0) = 0", d),
        fmt::format("getxattr(\"{}/renamed\", \"user.other\", 16) = 3", d)}) {
    INFO(line);
    CHECK(dump.find(line) != std::string::npos);
  }
  // the write and the fsync linked as submitted, through the ring in the replays
  int linked_write = 0;
  for (size_t at = 0, end; (end = dump.find('\n', at)) != std::string::npos; at = end + 1) {
    const std::string line = dump.substr(at, end - at);
    linked_write += line.find("pwrite64(") != std::string::npos &&
                    line.find(", @0, 4096) = 4096 <") != std::string::npos &&
                    line.find("[io_uring 1 link]") != std::string::npos;
  }
  CHECK(linked_write == 1);
  replays_through(work.path(), "io_uring", 28 + 3, 31);
}

TEST_CASE("bytes a ring moves through a socket pair and a pipe carry the data flow: copies copy") {
  if (!can_record()) return;
  temp_dir work("/dev/shm");
  const auto info = record_and_replay(work.path(), fmt::format("{} . streams", URING_WRITER), 20);
  // SEND and WRITE into the pipe; RECV and READ from it
  CHECK(info["ops"]["stream_write"] == 2);
  CHECK(info["ops"]["stream_read"] == 2);
  CHECK(info["bytes_written"] == 70736 + 16384 + 4096);  // the files': data, other, third, copies
  // Replayed with random bytes, the copies hold what `data` holds, as they did (the paths
  // were absolute: the files are under again/ at the same path)
  const int copied = run(fmt::format(
      "cd {1} && mkdir again && {0} replay t.trace again --timing afap --data random --seed 7 "
      "--no-progress >again.log 2>&1 && d=again{1} && head -c 16384 $d/data >want && "
      "cmp want $d/copy && head -c 4096 $d/data >want2 && cmp want2 $d/copy2 && "
      "! cmp -s -n 16384 want /dev/zero",
      FSRR_BIN, work.path()));
  INFO(slurp(work / "again.log"));
  CHECK(copied == 0);
}

TEST_CASE("an io_uring open into a fixed-file slot is followed: reads through it, its fd, its close") {
  if (!can_record()) return;
  temp_dir work("/dev/shm");
  // data opened into slot 1, 4 KiB read through the slot, the slot given fd N
  // (FIXED_FD_INSTALL), 100 bytes pread on N, the slot closed through the ring, N closed
  const auto info = record_and_replay(work.path(), fmt::format("{} . direct", URING_WRITER), 20);
  CHECK(info["complete"] == true);
  CHECK(info["bytes_written"] == 70736);
  // 28 requests of the plain run and the read through the slot, through a ring in the replay
  replays_through(work.path(), "io_uring", 28 + 1, 28 + 1);
  REQUIRE(run(fmt::format("{0} dump --json {1}/t.trace >{1}/dump.json", FSRR_BIN, work.path())) ==
          0);
  int64_t slot_fd = -1, installed = -1;
  int through_slot = 0, on_installed = 0, slot_closed = 0;
  std::ifstream in(work / "dump.json");
  for (std::string line; std::getline(in, line);) {
    const auto e = nlohmann::json::parse(line);
    const std::string op = e["op"];
    if (op == "openat" && e.value("result", -1) >= ::fsrr::fixed_fd_base) slot_fd = e["result"];
    if (op == "pread64" && e["fd"] == slot_fd && e.value("engine", "") == "io_uring")
      through_slot += e["result"] == 4096 && e["offset"] == 4096;
    if (op == "fcntl" && e["fd"] == slot_fd) installed = e["result"];
    if (op == "pread64" && e["fd"] == installed) on_installed += e["result"] == 100;
    if (op == "close" && e["fd"] == slot_fd) ++slot_closed;
  }
  CHECK(slot_fd >= ::fsrr::fixed_fd_base);  // the trace's own fd for the slot
  CHECK(through_slot == 1);
  CHECK(installed >= 0);
  CHECK(installed < ::fsrr::fixed_fd_base);
  CHECK(on_installed == 1);  // the same open file: no fd_bind of its own
  CHECK(slot_closed == 1);
  CHECK(info["ops"]["fd_bind"] == 1);  // only `third`'s, as in the plain run
}

// splice(2) moves bytes between a pipe and a file: the replay follows no pipe, so it replays
// the file's side, the read or the write of the bytes moved. pv splices a file into its
// output pipe and its input pipe into a file.
TEST_CASE("pv's splices replay as the reads and writes of their files' sides") {
  if (!can_record()) return;
  temp_dir work("/dev/shm");
  write_file(work / "in", 300000);
  const auto info =
      record_and_replay(work.path(), "pv -q in | cat >out1 && cat in | pv -q >out2", 20);
  struct stat st;
  REQUIRE(::stat((work / "out2").c_str(), &st) == 0);
  REQUIRE(st.st_size == 300000);
  // pv moves at most 128 KiB a call, a pipe holds 64 KiB: at least 5 calls each way
  CHECK(info["ops"]["splice"].get<uint64_t>() >= 10);
  // out1 by cat's writes, out2 by pv's splices; in read by pv's splices and by cat
  CHECK(info["bytes_written"] == 600000);
  replays_wrote(work.path(), 600000);
  const auto tmpfs = nlohmann::json::parse(slurp(work / "tmpfs.json"));
  CHECK(tmpfs["ops"]["splice"]["count"] == info["ops"]["splice"]);
  CHECK(tmpfs["ops"]["splice"]["mismatches"] == 0);
  CHECK(tmpfs["bytes_read"] == info["bytes_read"]);  // pv's and cat's reads of in, and more
  // out2 replayed to its recorded size, with the bytes the data flow says (verify --content)
  const int replayed = run(fmt::format(
      "cd {1} && mkdir again && {0} replay t.trace again --timing afap --data random --seed 5 "
      "--no-progress >again.log 2>&1 && {0} verify --content --data random --seed 5 t.trace "
      "again >>again.log 2>&1 && stat -c %s again{1}/out2 >size",
      FSRR_BIN, work.path()));
  INFO(slurp(work / "again.log"));
  REQUIRE(replayed == 0);
  CHECK(slurp(work / "size") == "300000\n");
}

TEST_CASE("io_uring SPLICE and TEE are recorded as splices and replay their files' sides") {
  if (!can_record()) return;
  temp_dir work("/dev/shm");
  const auto info = record_and_replay(work.path(), fmt::format("{} . splice", URING_WRITER), 20);
  CHECK(info["complete"] == true);
  // data -> pipe, pipe -> spliced, pipe -> the registered other; TEE joins two pipes
  CHECK(info["ops"]["splice"] == 3);
  CHECK(info["bytes_written"] == 70736 + 2 * 8192);
  replays_wrote(work.path(), 70736 + 2 * 8192);
  // 28 requests and the 3 splices through the ring, as their files' reads and writes
  replays_through(work.path(), "io_uring", 28 + 3, 28 + 3);
  REQUIRE(run(fmt::format("{0} dump --json {1}/t.trace >{1}/dump.json", FSRR_BIN, work.path())) ==
          0);
  std::vector<nlohmann::json> splices;
  {
    std::ifstream in(work / "dump.json");
    for (std::string line; std::getline(in, line);)
      if (auto e = nlohmann::json::parse(line); e["op"] == "splice") splices.push_back(e);
  }
  REQUIRE(splices.size() == 3);
  for (const auto& e : splices) {
    CHECK(e["engine"] == "io_uring");
    CHECK(e["result"] == 8192);
    CHECK(e["size"] == 8192);
  }
  // out of data at 4096 into a pipe; into spliced at 0; from a registered pipe (fd -1) into
  // the registered other at its position (fd2: the fd it was registered from)
  CHECK((splices[0].contains("file") && !splices[0].contains("file2")));
  CHECK((splices[0]["offset"] == 4096 && splices[0]["offset2"] == -1));
  CHECK((!splices[1].contains("file") && splices[1].contains("file2")));
  CHECK((splices[1]["offset"] == -1 && splices[1]["offset2"] == 0));
  CHECK((splices[2].contains("file2") && splices[2]["offset2"] == -1 && splices[2]["fd"] == -1));
  CHECK((splices[2]["sqe_flags"].get<int>() & 1) == 1);  // IOSQE_FIXED_FILE
  const int replayed = run(fmt::format(
      "cd {1} && mkdir again && {0} replay t.trace again --timing afap --data random --seed 5 "
      "--no-progress >again.log 2>&1 && {0} verify --content --data random --seed 5 t.trace "
      "again >>again.log 2>&1 && stat -c %s again{1}/spliced >size",
      FSRR_BIN, work.path()));
  INFO(slurp(work / "again.log"));
  REQUIRE(replayed == 0);
  CHECK(slurp(work / "size") == "8192\n");
}
