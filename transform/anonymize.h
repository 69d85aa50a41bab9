// anonymize: a trace with its names replaced by keyed digests, so that it can be shared.
//
// Every path component outside the kept prefixes, every component of a symlink's target,
// user.* and trusted.* xattr names, thread names, the command line and the host name become
// BLAKE2b digests (libsodium crypto_generichash) keyed with a 32-byte key, written in a
// filename-safe alphabet with the name's own length: the same name gives the same digest
// everywhere, in every trace anonymized with the same key, so traces of one site stay
// comparable; depth, name lengths, sizes, offsets, times, ops and results are untouched, and
// the trace replays as the original did. A digest that would collide with another name's in
// its directory grows by a character; one is never "." or ".." (the alphabet has no dot). A
// symlink's target is digested through the names it resolves to, so it still resolves.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "trace_reader.h"

namespace fsrr::transform {

struct anonymize_options {
  std::string key_file;  // its bytes hashed into the key; empty: a random key, forgotten
  std::vector<std::string> keep;  // prefixes kept as they are, beside system_prefixes
  bool force = false;             // replace an existing output
};

struct anonymize_result {
  std::string key_id;      // what info shows: a digest of the key, never the key
  uint64_t events = 0;
  uint64_t names = 0;      // path components replaced
  uint64_t grown = 0;      // digests that grew by a character to stay unique in a directory
};

using anonymize_key = std::array<uint8_t, 32>;

// The key of a key file (any bytes: a passphrase file works).
result<anonymize_key> key_from_file(const std::string& path);
result<anonymize_key> random_key();
std::string key_id(const anonymize_key& key);

// `len` characters of [A-Za-z0-9_-] that `name` stands for under `key`; a longer len extends
// a shorter one's.
std::string name_digest(const anonymize_key& key, std::string_view name, size_t len);

// Writes the anonymized copy of `in` to `out`.
result<anonymize_result> anonymize(trace_reader& in, const std::string& out,
                                   const anonymize_options& o);

}  // namespace fsrr::transform
