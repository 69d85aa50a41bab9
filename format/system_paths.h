// The directories of a system that hold programs, libraries and configuration, not a user's
// data: what every program reads on its way (ld.so's ELF headers, locale, NSS files), and
// what anonymize keeps as it is.
#pragma once

#include <array>
#include <string_view>

namespace fsrr {

inline constexpr std::array<std::string_view, 10> system_prefixes = {
    "/usr", "/lib", "/lib32", "/lib64", "/libx32", "/bin", "/sbin", "/etc", "/proc", "/sys"};

// Whether `path` (absolute, canonical) is one of them or lies beneath one.
constexpr bool is_system_path(std::string_view path) {
  for (std::string_view p : system_prefixes)
    if (path.substr(0, p.size()) == p && (path.size() == p.size() || path[p.size()] == '/'))
      return true;
  return false;
}

}  // namespace fsrr
