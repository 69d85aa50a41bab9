// probe_floor empty|minimal -- CMD [ARGS...]: runs CMD with bench/probe_floor.bpf.c's
// programs of that variant attached to sys_enter/sys_exit (see that file), draining the
// ring buffer in the meantime; prints to stderr the records it drained and CMD's run time
// (release to exit: without the programs' load) and exits with CMD's status. The floor under fsrr record's overhead, for bench/record_overhead.sh.
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <sys/wait.h>
#include <unistd.h>

#include <time.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "probe_floor_obj.h"  // the compiled object, embedded: probe_floor_bpf[]

namespace {

int count_record(void* ctx, void*, size_t) {
  ++*static_cast<unsigned long*>(ctx);
  return 0;
}

int fail(const char* what) {
  std::fprintf(stderr, "probe_floor: %s: %s\n", what, std::strerror(errno));
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4 || std::strcmp(argv[2], "--") != 0 ||
      (std::strcmp(argv[1], "empty") != 0 && std::strcmp(argv[1], "minimal") != 0)) {
    std::fprintf(stderr, "usage: probe_floor empty|minimal -- CMD [ARGS...]\n");
    return 2;
  }
  const std::string variant = argv[1];
  bpf_object_open_opts opts{};
  opts.sz = sizeof opts;
  opts.object_name = "probe_floor";
  bpf_object* obj = bpf_object__open_mem(probe_floor_bpf, sizeof probe_floor_bpf, &opts);
  if (!obj) return fail("open");
  bpf_program* prog;
  bpf_object__for_each_program(prog, obj) {
    const std::string name = bpf_program__name(prog);
    bpf_program__set_autoload(prog, name.rfind(variant, 0) == 0);
  }
  if (bpf_object__load(obj)) return fail("load");

  int go[2];
  if (::pipe(go)) return fail("pipe");
  const pid_t child = ::fork();
  if (child == 0) {  // held until the programs are attached
    char c;
    ::close(go[1]);
    if (::read(go[0], &c, 1) != 1) _exit(127);
    ::execvp(argv[3], argv + 3);
    _exit(127);
  }
  ::close(go[0]);
  bpf_map* bss = bpf_object__find_map_by_name(obj, ".bss");
  const __u32 key = 0, tgid = static_cast<__u32>(child);
  if (!bss || bpf_map_update_elem(bpf_map__fd(bss), &key, &tgid, BPF_ANY)) return fail("bss");
  bpf_object__for_each_program(prog, obj) {
    if (bpf_program__autoload(prog) && !bpf_program__attach(prog)) return fail("attach");
  }
  unsigned long records = 0;
  ring_buffer* rb = ring_buffer__new(bpf_map__fd(bpf_object__find_map_by_name(obj, "events")),
                                     count_record, &records, nullptr);
  if (!rb) return fail("ring buffer");
  timespec start, end;
  ::clock_gettime(CLOCK_MONOTONIC, &start);
  if (::write(go[1], "x", 1) != 1) return fail("release");
  int status = 0;
  for (;;) {
    ring_buffer__consume(rb);
    if (::waitpid(child, &status, WNOHANG) == child) break;
    ::usleep(10'000);
  }
  ::clock_gettime(CLOCK_MONOTONIC, &end);
  ring_buffer__consume(rb);
  const double secs = double(end.tv_sec - start.tv_sec) + (end.tv_nsec - start.tv_nsec) / 1e9;
  std::fprintf(stderr, "probe_floor %s: %lu records, workload %.3f s\n", variant.c_str(),
               records, secs);
  ring_buffer__free(rb);
  bpf_object__close(obj);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
