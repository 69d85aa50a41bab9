// A generated value for an extended attribute of a recorded size. Most names take any bytes;
// the kernel parses a few, so those get a valid value of the same size.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "data_source.h"

namespace fsrr {

std::vector<uint8_t> xattr_value(std::string_view name, uint32_t size, const data_source& data,
                                 uint64_t key);

}  // namespace fsrr
