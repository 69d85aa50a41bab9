#include "host_header.h"

#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

namespace fsrr {

header_info host_header(trace_kind kind, const std::vector<std::string>& command) {
  header_info h;
  h.writer = "fsrr " FSRR_VERSION;
  h.kind = kind;
  timespec mono, real;
  ::clock_gettime(CLOCK_MONOTONIC, &mono);
  ::clock_gettime(CLOCK_REALTIME, &real);
  h.clock_monotonic_ns = uint64_t(mono.tv_sec) * 1000000000 + mono.tv_nsec;
  h.clock_realtime_ns = int64_t(real.tv_sec) * 1000000000 + real.tv_nsec;
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) == 0) h.hostname = host;
  utsname u;
  if (::uname(&u) == 0) h.kernel = u.release;
  h.command = command;
  h.page_size = static_cast<uint32_t>(::sysconf(_SC_PAGESIZE));
  h.cpus = static_cast<uint32_t>(::sysconf(_SC_NPROCESSORS_ONLN));
  return h;
}

}  // namespace fsrr
