#include "fs_spec.h"

#include <cctype>

#include <fmt/format.h>

namespace fsrr::lab {
namespace {

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> parts;
  for (size_t pos = 0;;) {
    const size_t at = s.find(sep, pos);
    parts.push_back(
        s.substr(pos, at == std::string_view::npos ? std::string_view::npos : at - pos));
    if (at == std::string_view::npos) return parts;
    pos = at + 1;
  }
}

bool plain_name(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' && c != '.')
      return false;
  return true;
}

result<fs_layer> parse_layer(std::string_view text, std::string_view whole) {
  const auto parts = split(text, ':');
  fs_layer l;
  l.kind = std::string(parts[0]);
  if (!plain_name(l.kind))
    return failure("--fs {}: '{}' is not a file system kind", whole, parts[0]);
  for (size_t i = 1; i < parts.size(); ++i) {
    const size_t eq = parts[i].find('=');
    if (eq == std::string_view::npos)
      return failure("--fs {}: option '{}' is not KEY=VALUE", whole, parts[i]);
    const std::string_view key = parts[i].substr(0, eq), value = parts[i].substr(eq + 1);
    const auto add_mount = [&](std::string_view o) {
      if (!l.mount_opts.empty()) l.mount_opts += ',';
      l.mount_opts += o;
    };
    if (key == "compress") {
      if (l.kind != "btrfs") return failure("--fs {}: compress= is for btrfs", whole);
      add_mount(fmt::format("compress={}", value));
    } else if (key == "mkfs") {
      l.mkfs_opts = std::string(value);
    } else if (key == "mount") {
      add_mount(value);
    } else if (key == "size") {
      if (!(l.size = parse_bytes(value)))
        return failure("--fs {}: size={} is not a size", whole, value);
    } else {
      return failure("--fs {}: unknown option '{}' (compress, mkfs, mount, size)", whole, key);
    }
  }
  return l;
}

}  // namespace

uint64_t parse_bytes(std::string_view s) {
  uint64_t v = 0;
  size_t i = 0;
  for (; i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])); ++i) {
    if (v > (UINT64_MAX - 9) / 10) return 0;
    v = v * 10 + static_cast<uint64_t>(s[i] - '0');
  }
  if (i == 0) return 0;
  const std::string_view unit = s.substr(i);
  if (unit.empty()) return v;
  if (unit == "K" || unit == "k" || unit == "KiB") return v << 10;
  if (unit == "M" || unit == "m" || unit == "MiB") return v << 20;
  if (unit == "G" || unit == "g" || unit == "GiB") return v << 30;
  return 0;
}

result<fs_spec> parse_fs_spec(std::string_view text) {
  fs_spec spec;
  spec.name = std::string(text);
  if (text.empty()) return failure("--fs: empty file system");
  // NAME=DIR: a plain name, then an absolute directory
  if (const size_t eq = text.find('='); eq != std::string_view::npos &&
                                        plain_name(text.substr(0, eq)) && eq + 1 < text.size() &&
                                        text[eq + 1] == '/') {
    spec.dir = std::string(text.substr(eq + 1));
    return spec;
  }
  for (std::string_view layer : split(text, '@')) {
    result<fs_layer> l = parse_layer(layer, text);
    if (!l) return failure(l.error());
    spec.layers.push_back(std::move(*l));
  }
  for (size_t i = 0; i + 1 < spec.layers.size(); ++i)
    if (spec.layers[i].kind == "tmpfs")
      return failure("--fs {}: tmpfs has no image to put on another file system", text);
  if (spec.layers.size() > 3) return failure("--fs {}: at most three layers", text);
  return spec;
}

}  // namespace fsrr::lab
