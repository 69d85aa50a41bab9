// The content key of a tree file: the data source's key for its bytes. prepare, the replay
// engine and the data flow use the same one, so a file's bytes are the same whichever of them
// writes or expects them.
#pragma once

#include <cstdint>

#include "event.h"

namespace fsrr {

inline uint64_t content_key(path_id path) { return path; }

}  // namespace fsrr
