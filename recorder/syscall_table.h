// The x86_64 syscalls fsrr records: number -> op (format/ops.def) and how the BPF programs
// capture it (struct fsrr_sc, bpf/fsrr.h).
#pragma once

#include <array>
#include <optional>

#include "fsrr.h"
#include "ops.h"

namespace fsrr::recorder {

struct syscall_entry {
  op kind;
  fsrr_sc capture;
};

// Indexed by syscall number; empty for syscalls not recorded.
using syscall_table = std::array<std::optional<syscall_entry>, FSRR_MAX_SYSCALLS>;
const syscall_table& syscalls();

}  // namespace fsrr::recorder
