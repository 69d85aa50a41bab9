// What replayed ops are ordered by: a key per file, path or open file description an op
// touches. An op waits for the earlier ops on its keys that had ended before it started in the
// recording (replayer/ordering.h runs that; the MPI rank plan asks which ranks share a key).
#pragma once

#include <cstdint>

namespace fsrr {

// `replay`: the one key of engine_options::recorded_order, touched by every op.
enum class order_kind : uint64_t { file = 1, path = 2, handle = 3, replay = 4 };
constexpr uint64_t order_key(order_kind k, uint32_t id) {
  return static_cast<uint64_t>(k) << 32 | id;
}
// Marks a key on which the op waits for every earlier op, overlapping or not: the close that
// releases an open file must not run while another thread may still use its fd.
inline constexpr uint64_t order_all = uint64_t{1} << 63;
// Marks a key the op only shares with others of its kind: ops that use a directory to reach a
// name in it (create, stat, rename of different names) do not wait for each other, only for
// the ops on the directory itself (mkdir, rmdir, getdents), which wait for all of them.
inline constexpr uint64_t order_shared = uint64_t{1} << 62;
// Marks a key on which the op waits for every earlier op that used the key itself (not a name
// in it), overlapping or not: an op that met EEXIST lost a race to the op that made the name.
inline constexpr uint64_t order_race = uint64_t{1} << 61;
inline constexpr uint64_t order_marks = order_all | order_shared | order_race;

}  // namespace fsrr
