/* A fast 64-bit fingerprint of a kernel BTF blob. The build records the one of the BTF the
 * programs were compiled against; when the running kernel's matches, the recorder loads the
 * variant compiled with that BTF's offsets and type ids, which needs no CO-RE relocation
 * (libbpf spends ~0.7 ms per relocated type searching the kernel's 100k+ types). */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <string.h>

struct fsrr_btf_hash {
  uint64_t lane[4];
  uint64_t bytes;
};

static inline void fsrr_btf_hash_init(struct fsrr_btf_hash* h) {
  h->lane[0] = 0x243f6a8885a308d3ull;
  h->lane[1] = 0x13198a2e03707344ull;
  h->lane[2] = 0xa4093822299f31d0ull;
  h->lane[3] = 0x082efa98ec4e6c89ull;
  h->bytes = 0;
}

/* Feed 32-byte multiples, except for the last call. */
static inline void fsrr_btf_hash_add(struct fsrr_btf_hash* h, const void* data, size_t len) {
  const unsigned char* p = (const unsigned char*)data;
  uint64_t w;
  size_t i;

  for (i = 0; i < len; i += 8) {
    w = 0;
    memcpy(&w, p + i, len - i < 8 ? len - i : 8);
    uint64_t* l = &h->lane[(h->bytes + i) / 8 % 4];
    *l = (*l ^ w) * 0x9e3779b97f4a7c15ull;
    *l ^= *l >> 29;
  }
  h->bytes += len;
}

static inline uint64_t fsrr_btf_hash_end(const struct fsrr_btf_hash* h) {
  uint64_t v = h->bytes * 0xff51afd7ed558ccdull;
  int i;

  for (i = 0; i < 4; i++) v = (v ^ h->lane[i]) * 0xc4ceb9fe1a85ec53ull, v ^= v >> 33;
  return v;
}
