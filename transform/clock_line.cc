#include "clock_line.h"

#include <algorithm>
#include <cstddef>

namespace fsrr::transform {

uint64_t clock_line::at(uint64_t t) const {
  const int64_t v = offset + static_cast<int64_t>(t);
  return v < 0 ? 0 : static_cast<uint64_t>(v);
}

clock_line realtime_line(uint64_t base_mono, int64_t base_real,
                         const std::vector<std::pair<uint64_t, int64_t>>& pairs) {
  // CLOCK_MONOTONIC and CLOCK_REALTIME run at one rate (NTP slews both); what moves their
  // difference is a step of the realtime clock. The median difference stands for the trace,
  // so that one pair taken across a step does not place it; the trace's own times stay as
  // they were measured.
  std::vector<int64_t> d{base_real - static_cast<int64_t>(base_mono)};
  for (const auto& [mono, real] : pairs) d.push_back(real - static_cast<int64_t>(mono));
  std::nth_element(d.begin(), d.begin() + static_cast<ptrdiff_t>((d.size() - 1) / 2), d.end());
  clock_line l;
  l.offset = d[(d.size() - 1) / 2] + static_cast<int64_t>(base_mono);
  return l;
}

}  // namespace fsrr::transform
