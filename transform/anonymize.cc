#include "anonymize.h"

#include <fcntl.h>
#include <sodium.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <unordered_map>

#include <fmt/format.h>

#include "rewrite.h"
#include "system_paths.h"

namespace fsrr::transform {
namespace {

constexpr std::string_view alphabet =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
static_assert(alphabet.size() == 64);

// libsodium starts once; it fails only without a source of randomness. Its hashes work
// without it (slower), its random bytes do not.
bool sodium_ready() {
  static const bool ok = ::sodium_init() >= 0;
  return ok;
}

result<void> need_sodium() {
  if (!sodium_ready()) return failure("libsodium could not be initialised");
  return {};
}

std::vector<std::string_view> split(std::string_view s) {
  std::vector<std::string_view> out;
  size_t pos = 0;
  for (;;) {
    const size_t slash = s.find('/', pos);
    out.push_back(s.substr(pos, slash == std::string_view::npos ? std::string_view::npos : slash - pos));
    if (slash == std::string_view::npos) return out;
    pos = slash + 1;
  }
}

// The names of one anonymization: what each input path is called now, and which names each
// output directory holds already.
class anonymizer {
 public:
  anonymizer(trace_reader& in, const anonymize_key& key, std::vector<std::string> keep)
      : in_(in), key_(key), keep_(std::move(keep)) {
    for (std::string_view p : system_prefixes) keep_.emplace_back(p);
  }

  void bind(trace_rewriter& r) { rewriter_ = &r; }

  std::string component(path_id in, path_id parent, std::string_view name) {
    std::string out = kept(in) ? std::string(name) : unique(parent, name);
    if (in >= out_name_.size()) out_name_.resize(in + 1);
    out_name_[in] = out;
    return out;
  }

  std::string text(string_role role, std::string_view s, path_id link) {
    switch (role) {
      case string_role::link_target:
        return target(s, link);
      case string_role::xattr_name:
        for (std::string_view ns : {"user.", "trusted."})
          if (s.substr(0, ns.size()) == ns)
            return std::string(ns) + digest(s.substr(ns.size()));
        return std::string(s);  // system.* and security.*: the kernel's names
      case string_role::root_where:
        if (const auto dir = host_root_name(s)) {  // merge --shared's: named as its host is
          const auto [recorded, suffix] = host_name_parts(*dir);
          return std::string(host_root_tag) + digest(recorded) + suffix;
        }
        return path_text(s);
      default:
        return digest(s);
    }
  }

  // A command-line argument: a path (it has a '/') as paths are, any other word digested.
  std::string argument(std::string_view a) {
    return a.find('/') != std::string_view::npos ? path_text(a) : digest(a);
  }

  std::string digest(std::string_view s) const { return name_digest(key_, s, s.size()); }

  uint64_t names = 0, grown = 0;

 private:
  bool kept(path_id in) { return kept_path(in_.path_string(in), keep_); }

  // The name's digest, one character longer each time another name of the directory has it.
  std::string unique(path_id parent, std::string_view name) {
    ++names;
    for (size_t len = name.size();; ++len) {
      std::string d = name_digest(key_, name, len);
      auto [it, added] = taken_.try_emplace(fmt::format("{}/{}", parent, d), name);
      if (added || it->second == name) {
        if (len > name.size()) ++grown;
        return d;
      }
    }
  }

  // A path given as text (a root's place, an argument): components outside the kept
  // prefixes digested; no directory to be unique in.
  std::string path_text(std::string_view p) {
    const auto parts = split(p);
    const bool absolute = !p.empty() && p.front() == '/';
    std::string out = absolute ? "/" : "", original;
    for (size_t i = absolute ? 1 : 0; i < parts.size(); ++i) {
      const std::string_view c = parts[i];
      if (i > (absolute ? 1u : 0u)) out += '/';
      if (absolute) original.append("/").append(c);
      if (c.empty() || c == "." || c == ".." || (absolute && kept_path(original, keep_)))
        out.append(c);
      else
        out += digest(c);
    }
    return out;
  }

  // A symlink's target, component by component: through the names it leads to in the trace
  // where it leads to one (so it still does), digested as any name where it does not.
  std::string target(std::string_view t, path_id link) {
    if (t.empty()) return {};
    const auto parts = split(t);
    const bool absolute = t.front() == '/';
    path_id at = no_id;
    if (link != no_id) at = absolute ? in_.top_of(link) : in_.path(link).parent;
    std::string out = absolute ? "/" : "", original;
    for (size_t i = absolute ? 1 : 0; i < parts.size(); ++i) {
      const std::string_view c = parts[i];
      if (i > (absolute ? 1u : 0u)) out += '/';
      if (absolute) original.append("/").append(c);
      if (c.empty() || c == ".") {
        out.append(c);
        continue;
      }
      if (c == "..") {
        out += "..";
        if (at != no_id && in_.path(at).parent != no_id) at = in_.path(at).parent;
        continue;
      }
      const path_id child = at != no_id ? lookup(at, c) : no_id;
      if (child != no_id) {
        rewriter_->path(child);  // names it, if nothing had yet
        out += out_name_[child];
      } else if (absolute && kept_path(original, keep_)) {
        out.append(c);
      } else {
        out += digest(c);
      }
      at = child;
    }
    return out;
  }

  path_id lookup(path_id parent, std::string_view name) {
    if (!indexed_) {  // built at the first link: most traces have none
      for (path_id p = root_path + 1; p <= in_.path_count(); ++p) {
        const path_entry& e = in_.path(p);
        if (e.parent != no_id) children_.emplace(fmt::format("{}/{}", e.parent, e.name), p);
      }
      indexed_ = true;
    }
    const auto it = children_.find(fmt::format("{}/{}", parent, name));
    return it == children_.end() ? no_id : it->second;
  }

  trace_reader& in_;
  const anonymize_key& key_;
  std::vector<std::string> keep_;
  trace_rewriter* rewriter_ = nullptr;
  std::vector<std::string> out_name_;                    // by input path id
  std::unordered_map<std::string, std::string> taken_;   // "parent/digest" -> the name
  std::unordered_map<std::string, path_id> children_;    // "parent/name" -> input path
  bool indexed_ = false;
};

}  // namespace

result<anonymize_key> key_from_file(const std::string& path) {
  FSRR_TRY(need_sodium());
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return failure("--key-file {}: {}", path, std::strerror(errno));
  crypto_generichash_state st;
  crypto_generichash_init(&st, nullptr, 0, 32);
  uint8_t buf[65536];
  uint64_t total = 0;
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      return failure("--key-file {}: {}", path, std::strerror(err));
    }
    if (n == 0) break;
    crypto_generichash_update(&st, buf, static_cast<size_t>(n));
    total += static_cast<uint64_t>(n);
  }
  ::close(fd);
  if (total == 0) return failure("--key-file {}: empty", path);
  anonymize_key key;
  crypto_generichash_final(&st, key.data(), key.size());
  return key;
}

result<anonymize_key> random_key() {
  FSRR_TRY(need_sodium());
  anonymize_key key;
  randombytes_buf(key.data(), key.size());
  return key;
}

std::string key_id(const anonymize_key& key) {
  sodium_ready();
  static constexpr std::string_view context = "fsrr anonymize key id";
  uint8_t id[8];
  crypto_generichash(id, sizeof id, reinterpret_cast<const uint8_t*>(context.data()),
                     context.size(), key.data(), key.size());
  std::string hex;
  for (uint8_t b : id) hex += fmt::format("{:02x}", b);
  return hex;
}

std::string name_digest(const anonymize_key& key, std::string_view name, size_t len) {
  sodium_ready();
  std::string out;
  out.reserve(len);
  for (uint32_t block = 0; out.size() < len; ++block) {
    uint8_t h[64];
    crypto_generichash_state st;
    crypto_generichash_init(&st, key.data(), key.size(), sizeof h);
    crypto_generichash_update(&st, reinterpret_cast<const uint8_t*>(&block), sizeof block);
    crypto_generichash_update(&st, reinterpret_cast<const uint8_t*>(name.data()), name.size());
    crypto_generichash_final(&st, h, sizeof h);
    for (uint8_t b : h) {
      if (out.size() == len) break;
      out += alphabet[b & 63];
    }
  }
  return out;
}

result<anonymize_result> anonymize(trace_reader& in, const std::string& out,
                                   const anonymize_options& o) {
  const auto made = o.key_file.empty() ? random_key() : key_from_file(o.key_file);
  if (!made) return tl::unexpected(made.error());
  const anonymize_key& key = *made;
  anonymizer names(in, key, o.keep);
  header_info h = in.header();
  h.hostname = names.digest(h.hostname);
  for (std::string& a : h.command) a = names.argument(a);
  for (host_info& x : h.hosts) {  // a merged trace's hosts: merge's #N kept, as merge made it
    const auto [recorded, suffix] = host_name_parts(x.name);
    x.name = names.digest(recorded) + suffix;
    for (std::string& a : x.command) a = names.argument(a);
  }
  h.derived = "anonymize";
  h.key_id = key_id(key);
  rewrite_hooks hooks;
  hooks.name = [&](path_id p, path_id parent, std::string_view n) {
    return names.component(p, parent, n);
  };
  hooks.text = [&](string_role role, std::string_view s, path_id link) {
    return names.text(role, s, link);
  };
  auto rewriter = trace_rewriter::create(in, out, h, o.force, std::move(hooks));
  if (!rewriter) return tl::unexpected(rewriter.error());
  trace_rewriter& r = *rewriter;
  names.bind(r);
  for (const tree_entry& e : in.tree()) r.add_tree_entry(e);
  anonymize_result res;
  auto events = in.events();
  for (event e; events.next(e); ++res.events) r.append(e);
  FSRR_TRY(events.status());
  r.copy_counters();
  FSRR_TRY(r.finish());
  res.key_id = h.key_id;
  res.names = names.names;
  res.grown = names.grown;
  return res;
}

}  // namespace fsrr::transform
