#include "ops.h"

namespace fsrr {

std::optional<op> op_from_name(std::string_view wanted) {
  for (size_t i = 0; i < op_count; ++i)
    if (op_table[i].name == wanted) return static_cast<op>(i);
  return std::nullopt;
}

}  // namespace fsrr
