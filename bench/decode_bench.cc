// decode_bench [EVENTS]: write a copy-shaped trace (8 threads, each copying files: openat,
// fstat, read/write loop, close) and time reading it back through the event stream.
// Prints events/s for the whole read (open, tables, decompress, decode, merge) and bytes/event.
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <fmt/format.h>

#include "trace_error.h"
#include "trace_reader.h"
#include "trace_writer.h"

using namespace fsrr;

namespace {

uint64_t write_trace(const std::string& path, uint64_t target_events) {
  header_info h;
  h.writer = "decode_bench";
  writer_options opt;
  opt.overwrite = true;
  trace_writer w = or_throw(trace_writer::create(path, h, opt));
  constexpr int nthreads = 8;
  thread_id threads[nthreads];
  uint64_t ts[nthreads];
  for (int t = 0; t < nthreads; ++t) {
    threads[t] = w.add_thread({1000 + t, 1000, 1, w.intern_string("cp"), 1});
    ts[t] = t * 333;
  }
  uint64_t n = 0, file = 0, x = 88172645463325252ull;
  auto jitter = [&](uint64_t base) {  // xorshift: recorded times are never round numbers
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return base + x % (base / 2 + 1);
  };
  while (n < target_events) {
    for (int t = 0; t < nthreads && n < target_events; ++t, ++file) {
      const std::string name = fmt::format("/src/d{}/f{}", file / 100, file);
      const path_id src = w.intern_path(name);
      const path_id dst = w.intern_path("/dst" + name.substr(4));
      const file_id fs = w.intern_file({1, file * 2, 1, S_IFREG});
      const file_id fd = w.intern_file({2, file * 2 + 1, 1, S_IFREG});
      const uint64_t size = 4096 * (1 + file % 16);
      auto add = [&](event e) {
        e.thread = threads[t];
        e.ts = ts[t] = jitter(400) + ts[t];
        e.dur = jitter(800);
        ts[t] += e.dur;
        w.append(e);
        ++n;
      };
      event e;
      e.kind = op::openat, e.path = src, e.file = fs, e.flags = 0x80000, e.result = 3;
      add(e);
      e = {}, e.kind = op::fstat, e.fd = 3, e.file = fs;
      add(e);
      e = {}, e.kind = op::openat, e.path = dst, e.file = fd, e.flags = 0x80241, e.mode = 0644,
      e.result = 4;
      add(e);
      for (uint64_t off = 0; off < size; off += 65536) {
        const uint64_t len = std::min<uint64_t>(65536, size - off);
        e = {}, e.kind = op::read, e.fd = 3, e.file = fs, e.offset = off, e.size = 65536,
        e.result = static_cast<int64_t>(len);
        add(e);
        e = {}, e.kind = op::write, e.fd = 4, e.file = fd, e.offset = off, e.size = len,
        e.result = static_cast<int64_t>(len);
        add(e);
      }
      e = {}, e.kind = op::close, e.fd = 4, e.file = fd;
      add(e);
      e = {}, e.kind = op::close, e.fd = 3, e.file = fs;
      add(e);
    }
  }
  or_throw(w.finish());
  return n;
}

}  // namespace

int main(int argc, char** argv) {
  // An argument that names a file reads that trace instead of writing a synthetic one.
  struct stat given;
  const bool existing = argc > 1 && ::stat(argv[1], &given) == 0;
  const uint64_t want = argc > 1 && !existing ? std::strtoull(argv[1], nullptr, 10) : 10000000;
  if (argc > 2 || (argc > 1 && !existing && want == 0)) {
    std::fprintf(stderr, "usage: bench_decode [TRACE | EVENTS (default 10000000)]\n");
    return 2;
  }
  const std::string path =
      existing ? argv[1] : fmt::format("/dev/shm/fsrr-decode-bench.{}.trace", ::getpid());
  const uint64_t n =
      existing ? or_throw(trace_reader::open(path)).summary().events : write_trace(path, want);
  struct stat st;
  ::stat(path.c_str(), &st);
  // CPU time as well as wall time: on a shared machine the wall clock also counts waiting.
  auto cpu_now = [] {
    timespec t;
    ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
  };
  double best = 1e9, best_cpu = 1e9;
  uint64_t checksum = 0;
  for (int round = 0; round < 5; ++round) {
    const auto a = std::chrono::steady_clock::now();
    const double cpu_a = cpu_now();
    trace_reader r = or_throw(trace_reader::open(path));
    auto s = r.events();
    event e;
    uint64_t count = 0;
    while (s.next(e)) {
      ++count;
      checksum += e.ts ^ e.offset;
    }
    or_throw(s.status());
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - a).count();
    if (count != n) {
      fmt::print(stderr, "read {} events, wrote {}\n", count, n);
      return 1;
    }
    best = std::min(best, secs);
    best_cpu = std::min(best_cpu, cpu_now() - cpu_a);
  }
  if (!existing) ::unlink(path.c_str());
  fmt::print("events: {}  trace: {} bytes ({:.2f} bytes/event)\n", n, st.st_size,
             double(st.st_size) / n);
  fmt::print("decode: {:.1f} M events/s wall, {:.1f} M events/s of CPU time (best of 5; the whole "
             "read: open, tables, zstd, decode, merge by time)  [checksum {:x}]\n",
             n / best / 1e6, n / best_cpu / 1e6, checksum & 0xffff);
  return 0;
}
