#include "probes.h"

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <fcntl.h>
#include <linux/nsfs.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "btf_exact.h"
#include "btf_hash.h"
#include "fsrr.h"
#include "fsrr.skel.h"
#include "fsrr_exact.skel.h"
#include "fsrr_exact_btf.h"
#include "pseudo_fs.h"
#include "syscall_table.h"
#include "unique_fd.h"

namespace fsrr::recorder {
namespace {

constexpr unsigned pidfd_thread = O_EXCL;  // PIDFD_THREAD: a pidfd for one thread

// libbpf's messages: warnings and errors only, and the verifier log when a load fails.
std::string* load_log = nullptr;
int print_libbpf(enum libbpf_print_level level, const char* format, va_list args) {
  if (level == LIBBPF_DEBUG || !load_log) return 0;
  va_list copy;
  va_copy(copy, args);
  const int n = std::vsnprintf(nullptr, 0, format, copy);
  va_end(copy);
  if (n <= 0) return 0;
  std::string line(static_cast<size_t>(n) + 1, '\0');
  std::vsnprintf(line.data(), line.size(), format, args);
  line.pop_back();
  load_log->append(line);
  return 0;
}

// libbpf's messages while it lives: print_libbpf appends them to text().
class libbpf_log {
 public:
  libbpf_log() {
    load_log = &text_;
    libbpf_set_print(print_libbpf);
  }
  ~libbpf_log() { load_log = nullptr; }
  libbpf_log(const libbpf_log&) = delete;
  libbpf_log& operator=(const libbpf_log&) = delete;
  const std::string& text() const { return text_; }

 private:
  std::string text_;
};

tl::unexpected<error> failed(const std::string& what, int err) {
  std::string msg = fmt::format("{}: {}", what, std::strerror(err));
  if (err == EPERM || err == EACCES) msg += " (fsrr record needs root: CAP_BPF and CAP_PERFMON)";
  return failure(std::move(msg));
}

// Whether the running kernel's BTF is the one the exact build was compiled against. Kernels
// since 6.15 map it; older ones are read.
bool kernel_btf_is_build_btf() {
  const int fd = ::open("/sys/kernel/btf/vmlinux", O_RDONLY | O_CLOEXEC);
  struct stat st;
  if (fd < 0 || ::fstat(fd, &st) != 0) {
    if (fd >= 0) ::close(fd);
    return false;
  }
  fsrr_btf_hash h;
  fsrr_btf_hash_init(&h);
  const auto size = static_cast<size_t>(st.st_size);
  if (void* m = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0); m != MAP_FAILED) {
    fsrr_btf_hash_add(&h, m, size);
    ::munmap(m, size);
  } else {
    std::vector<char> buf(1 << 20);
    for (;;) {
      size_t have = 0;  // whole buffers but the last: the hash takes 8-byte words
      ssize_t n;
      while (have < buf.size() && (n = ::read(fd, buf.data() + have, buf.size() - have)) > 0)
        have += static_cast<size_t>(n);
      fsrr_btf_hash_add(&h, buf.data(), have);
      if (have < buf.size()) break;
    }
  }
  ::close(fd);
  return fsrr_btf_hash_end(&h) == FSRR_BTF_HASH;
}

// fsrr's pid namespace: how deep it is below the initial one, and its inode. Pids fsrr reads
// and writes are in it; the programs translate theirs. The depth is counted by climbing to
// the parent namespaces (NS_GET_PARENT), not from /proc/self/status, whose NSpid starts at
// the namespace of whoever mounted /proc: a container's own /proc hides the levels above.
result<std::pair<uint32_t, uint32_t>> own_pid_namespace() {
  int fd = ::open("/proc/self/ns/pid", O_RDONLY | O_CLOEXEC);
  struct stat ns {};
  if (fd < 0 || ::fstat(fd, &ns) != 0) {
    if (fd >= 0) ::close(fd);
    return failure("cannot read /proc/self/ns/pid");
  }
  uint32_t level = 0;
  for (int up; (up = ::ioctl(fd, NS_GET_PARENT)) >= 0; ++level) {
    ::close(fd);
    fd = up;
  }
  const int err = errno;  // EPERM at the initial namespace; else a user namespace in between
  ::close(fd);
  if (err != EPERM)
    return failure("cannot tell fsrr's pid namespace depth: {}", std::strerror(err));
  return std::pair{level, static_cast<uint32_t>(ns.st_ino)};
}

}  // namespace

std::string save_load_log(const std::string& log) {
  if (log.empty()) return "";
  std::string name;
  int fd = -1;
  if (const char* chosen = std::getenv("FSRR_BPF_LOG"); chosen && *chosen) {
    name = chosen;
    fd = ::open(chosen, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  } else {
    const char* tmp = std::getenv("TMPDIR");
    name = fmt::format("{}/fsrr-bpf-load.XXXXXX.log", tmp && *tmp ? tmp : "/tmp");
    fd = ::mkstemps(name.data(), 4);
  }
  if (fd < 0) return "";
  const bool ok = ::write(fd, log.data(), log.size()) == static_cast<ssize_t>(log.size());
  ::close(fd);
  return ok ? name : "";
}

template <class Skel>
result<void> probes::open(Skel* (*open_skeleton)(const bpf_object_open_opts*),
                          const bpf_object_open_opts* how, const probe_options& options) {
  Skel* skel = open_skeleton(how);
  if (!skel) return failed("cannot open the BPF programs", errno);
  bpf_ = {skel,
          skel->skeleton,
          skel->maps.events,
          skel->maps.state,
          skel->maps.counters,
          skel->maps.iter_tgids,
          skel->maps.paused,
          skel->maps.roots,
          skel->maps.cgroup_of,
          skel->maps.path_filter,
          skel->progs.fsrr_sys_enter,
          skel->progs.fsrr_sys_exit,
          skel->progs.fsrr_fork,
          skel->progs.fsrr_exec,
          skel->progs.fsrr_exit,
          skel->progs.fsrr_task_files,
          skel->progs.fsrr_uring_submit,
          skel->progs.fsrr_uring_complete,
          skel->progs.fsrr_fault_user,
          skel->progs.fsrr_fault_kernel};
  auto& ro = *skel->rodata;
  ro.targ_self_tgid = static_cast<uint32_t>(::getpid());
  const auto pidns = own_pid_namespace();
  if (!pidns) return tl::unexpected(pidns.error());
  ro.targ_pidns_level = pidns->first;
  ro.targ_pidns_ino = pidns->second;
  ro.targ_self_mnt_id = options.self_mnt_id;
  ro.targ_self_root_mnt = options.self_root.mnt_id;
  ro.targ_self_root_ino = options.self_root.ino;
  ro.targ_self_mnt_ns = options.self_root.mnt_ns;
  ro.targ_cgroup = options.cgroup_fd >= 0;
  ro.targ_npaths = static_cast<uint32_t>(std::min<size_t>(options.kept_dirs.size(), FSRR_PATHS));
  for (uint32_t k = 0; k < ro.targ_npaths; ++k) {
    const_cast<__u32&>(ro.targ_path_mnt[k]) = options.kept_dirs[k].first;
    const_cast<__u64&>(ro.targ_path_ino[k]) = options.kept_dirs[k].second;
  }
  ro.targ_all = options.all;
  // Woken when an eighth of the ring buffer may be waiting, whichever CPUs sent it.
  const int cpus = libbpf_num_possible_cpus();
  ro.targ_wakeup_bytes = std::max<uint64_t>(options.ring_bytes / 8 / std::max(cpus, 1), 4096);
  // Half the ring: the other half takes what the threads already in a syscall still send.
  ro.targ_pause_bytes = options.pause ? options.ring_bytes / 2 : 0;
  const auto magics = pseudo_fs_magics();
  std::copy(magics.begin(), magics.end(), const_cast<uint32_t*>(ro.targ_pseudo_fs));
  const auto& table = syscalls();
  for (size_t nr = 0; nr < table.size(); ++nr)
    if (table[nr]) std::memcpy((void*)&ro.targ_sc[nr], &table[nr]->capture, sizeof(fsrr_sc));
  return {};
}

result<probes> probes::load(const probe_options& options, record_sink sink) {
  if (::access("/sys/kernel/btf/vmlinux", R_OK) != 0)
    return failure("this kernel has no BTF (/sys/kernel/btf/vmlinux): cannot record");
  probes p(std::move(sink));  // its destructor unloads what a failed step leaves loaded
  FSRR_TRY(p.load_programs(options));
  FSRR_TRY(p.set_filters(options));
  p.ring_bytes_ = options.ring_bytes;
  return p;
}

// Whether the running kernel has every tracepoint named, for tp_btf programs to attach to.
static bool kernel_has_tracepoints(std::initializer_list<const char*> names) {
  btf* vmlinux = btf__load_vmlinux_btf();
  if (!vmlinux) return false;
  bool all = true;
  for (const char* name : names) {
    const std::string type = fmt::format("btf_trace_{}", name);
    all = all && btf__find_by_name_kind(vmlinux, type.c_str(), BTF_KIND_TYPEDEF) > 0;
  }
  btf__free(vmlinux);
  return all;
}

// Opens the build that fits this kernel, hands it the knobs and loads it into the kernel.
result<void> probes::load_programs(const probe_options& options) {
  libbpf_log log;
  // The exact build's CO-RE target: libbpf takes it by path, and reads it at load.
  unique_fd btf;
  exact_ = !options.portable && kernel_btf_is_build_btf();
  if (exact_) {
    btf.reset(static_cast<int>(::syscall(SYS_memfd_create, "fsrr-btf", MFD_CLOEXEC)));
    exact_ = btf && ::write(btf.get(), fsrr_exact_min_btf, sizeof fsrr_exact_min_btf) ==
                        static_cast<ssize_t>(sizeof fsrr_exact_min_btf);
  }
  if (exact_) {
    const std::string path = fmt::format("/proc/self/fd/{}", btf.get());
    LIBBPF_OPTS(bpf_object_open_opts, how, .btf_custom_path = path.c_str());
    FSRR_TRY(open(fsrr_exact_bpf__open_opts, &how, options));
  } else {
    FSRR_TRY(open(fsrr_bpf__open_opts, nullptr, options));
  }
  bpf_map__set_max_entries(bpf_.events, static_cast<uint32_t>(options.ring_bytes));
  bpf_program__set_autoattach(bpf_.task_files, false);
  bpf_program__set_autoload(bpf_.task_files, options.read_open_files);
  // A kernel without io_uring (or its tracepoints) is recorded without them: io_uring_setup
  // then marks the trace incomplete, as it did before they were followed.
  uring_ = kernel_has_tracepoints({"io_uring_submit_req", "io_uring_complete"});
  bpf_program__set_autoload(bpf_.uring_submit, uring_);
  bpf_program__set_autoload(bpf_.uring_complete, uring_);
  faults_ = kernel_has_tracepoints({"page_fault_user", "page_fault_kernel"});
  bpf_program__set_autoload(bpf_.fault_user, faults_);
  bpf_program__set_autoload(bpf_.fault_kernel, faults_);

  const int err = bpf_object__load_skeleton(bpf_.object);
  if (!err) return {};
  // EACCES is also the verifier refusing a program: as root, that is what it means
  if (err == -EPERM || (err == -EACCES && ::geteuid() != 0))
    return failed("cannot load the BPF programs", -err);
  // libbpf's messages and the verifier's log (thousands of lines) go to a file the one
  // line names: $FSRR_BPF_LOG, or a new one in $TMPDIR.
  const std::string saved = save_load_log(log.text());
  return failure("cannot load the BPF programs: {}{}", std::strerror(-err),
                 saved.empty() ? "" : " (libbpf and the verifier said why: " + saved + ")");
}

// What the loaded programs filter on: --path (on until a kept directory is replaced) and
// --cgroup.
result<void> probes::set_filters(const probe_options& options) {
  const uint32_t zero = 0, on = 1;
  bpf_map_update_elem(bpf_map__fd(bpf_.path_filter), &zero, &on, BPF_ANY);
  if (options.cgroup_fd >= 0 &&
      bpf_map_update_elem(bpf_map__fd(bpf_.cgroup_of), &zero, &options.cgroup_fd, BPF_ANY) != 0)
    return failed("--cgroup: not a cgroup v2 directory", errno);
  return {};
}

probes::probes(probes&& o) noexcept
    : bpf_(std::exchange(o.bpf_, {})),
      exact_(o.exact_),
      uring_(o.uring_),
      faults_(o.faults_),
      ring_bytes_(o.ring_bytes_),
      sink_(std::move(o.sink_)),
      attached_(std::exchange(o.attached_, false)) {}

probes::~probes() {
  detach();
  destroy();
}

void probes::destroy() {
  if (!bpf_.object) return;
  bpf_object__destroy_skeleton(bpf_.object);  // what fsrr_bpf__destroy() does
  std::free(bpf_.skeleton);
  bpf_ = {};
}

result<bool> probes::trace_thread(pid_t tid, bool spawned) {
  // Nothing in flight, not announced yet.
  task_state value{};
  if (spawned) value.flags = TASK_SPAWNED;
  static_assert(sizeof value <= 4096);
  if (bpf_map__value_size(bpf_.state) != sizeof value)
    return failed("task storage of another layout", EINVAL);
  const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, tid, pidfd_thread));
  if (pidfd < 0) return false;
  const int err = bpf_map_update_elem(bpf_map__fd(bpf_.state), &pidfd, &value, BPF_NOEXIST);
  const int saved = errno;
  ::close(pidfd);
  if (err && saved != EEXIST) {
    if (saved == ESRCH) return false;
    return failed(fmt::format("cannot trace thread {}", tid), saved);
  }
  return true;
}

result<void> probes::attach() {
  if (attached_) return {};
  if (const int err = bpf_object__attach_skeleton(bpf_.object))
    return failed("cannot attach the BPF programs", -err);
  attached_ = true;
  return {};
}

void probes::detach() {
  if (!attached_) return;
  bpf_object__detach_skeleton(bpf_.object);
  attached_ = false;
}

int probes::ring_fd() const {
  return bpf_map__fd(bpf_.events);
}

int probes::paused_fd() const {
  return bpf_map__fd(bpf_.paused);
}

void probes::add_root(const fsrr_root& root) {
  const uint8_t one = 1;
  bpf_map_update_elem(bpf_map__fd(bpf_.roots), &root, &one, BPF_ANY);
}

void probes::stop_kernel_path_filter() {
  const uint32_t zero = 0, off = 0;
  bpf_map_update_elem(bpf_map__fd(bpf_.path_filter), &zero, &off, BPF_ANY);
}

std::vector<uint64_t> probes::counter(uint32_t which) const {
  const int cpus = libbpf_num_possible_cpus();
  std::vector<uint64_t> values(static_cast<size_t>(cpus > 0 ? cpus : 1), 0);
  bpf_map_lookup_elem(bpf_map__fd(bpf_.counters), &which, values.data());
  return values;
}

uint64_t probes::missed_runs() const {
  uint64_t total = 0;
  bpf_program* progs[] = {bpf_.sys_enter,      bpf_.sys_exit,       bpf_.fork,
                          bpf_.exec,           bpf_.exit,           bpf_.uring_submit,
                          bpf_.uring_complete, bpf_.fault_user,     bpf_.fault_kernel};
  for (bpf_program* p : progs) {
    if (bpf_program__fd(p) < 0) continue;  // not loaded
    bpf_prog_info info{};
    uint32_t len = sizeof info;
    if (bpf_obj_get_info_by_fd(bpf_program__fd(p), &info, &len) == 0)
      total += info.recursion_misses;
  }
  return total;
}

result<void> probes::read_open_files(const std::vector<pid_t>& tgids) {
  const int map = bpf_map__fd(bpf_.iter_tgids);
  for (pid_t t : tgids) {
    const uint32_t key = static_cast<uint32_t>(t);
    const uint8_t one = 1;
    bpf_map_update_elem(map, &key, &one, BPF_ANY);
  }
  bpf_link* link = bpf_program__attach_iter(bpf_.task_files, nullptr);
  if (!link) return failed("cannot start the open-file iterator", errno);
  const int fd = bpf_iter_create(bpf_link__fd(link));
  if (fd < 0) {
    const int err = errno;
    bpf_link__destroy(link);
    return failed("cannot start the open-file iterator", err);
  }
  // Records are 8-byte multiples; keep the buffer aligned and carry partial ones over.
  std::vector<uint64_t> buf(1 << 14);
  size_t have = 0;
  for (;;) {
    auto* bytes = reinterpret_cast<uint8_t*>(buf.data());
    const ssize_t n = ::read(fd, bytes + have, buf.size() * 8 - have);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    have += static_cast<size_t>(n);
    size_t at = 0;
    while (have - at >= sizeof(fsrr_rec_hdr)) {
      const auto* h = reinterpret_cast<const fsrr_rec_hdr*>(bytes + at);
      if (h->len < sizeof(fsrr_rec_hdr) || h->len > have - at) break;
      sink_({bytes + at, h->len});
      at += h->len;
    }
    std::memmove(bytes, bytes + at, have - at);
    have -= at;
  }
  ::close(fd);
  bpf_link__destroy(link);
  for (pid_t t : tgids) {
    const uint32_t key = static_cast<uint32_t>(t);
    bpf_map_delete_elem(map, &key);
  }
  return {};
}

}  // namespace fsrr::recorder
