#include "xattr_value.h"

#include <cstring>

#include "kernel_constants.h"

namespace fsrr {
namespace {

// POSIX ACL xattr layout: see kernel_constants.h.
enum : uint16_t {
  acl_user_obj = FSRR_ACL_USER_OBJ,
  acl_user = FSRR_ACL_USER,
  acl_group_obj = FSRR_ACL_GROUP_OBJ,
  acl_mask = FSRR_ACL_MASK,
  acl_other = FSRR_ACL_OTHER
};

void put_entry(std::vector<uint8_t>& v, uint16_t tag, uint16_t perm, uint32_t id) {
  uint8_t e[8];
  std::memcpy(e, &tag, 2);
  std::memcpy(e + 2, &perm, 2);
  std::memcpy(e + 4, &id, 4);
  v.insert(v.end(), e, e + 8);
}

// A valid ACL of exactly `size` bytes when the size allows one (4 + 8n, n >= 3): the three
// base entries, named users for the rest, and the mask that named entries require.
bool posix_acl(uint32_t size, std::vector<uint8_t>& v) {
  if (size < 28 || (size - 4) % 8 != 0) return false;
  const uint32_t n = (size - 4) / 8;
  const uint32_t version = FSRR_ACL_VERSION;
  v.resize(4);
  std::memcpy(v.data(), &version, 4);
  put_entry(v, acl_user_obj, 6, ~0u);
  if (n == 3) {
    put_entry(v, acl_group_obj, 4, ~0u);
    put_entry(v, acl_other, 4, ~0u);
    return true;
  }
  for (uint32_t i = 0; i < n - 4; ++i) put_entry(v, acl_user, 4, 10000 + i);
  put_entry(v, acl_group_obj, 4, ~0u);
  put_entry(v, acl_mask, 6, ~0u);
  put_entry(v, acl_other, 4, ~0u);
  return true;
}

}  // namespace

std::vector<uint8_t> xattr_value(std::string_view name, uint32_t size, const data_source& data,
                                 uint64_t key) {
  std::vector<uint8_t> v;
  if ((name == "system.posix_acl_access" || name == "system.posix_acl_default") &&
      posix_acl(size, v))
    return v;
  v.resize(size);
  // Offset by the name's hash so two attributes of one file differ.
  uint64_t h = 1469598103934665603ull;
  for (const char c : name) h = (h ^ static_cast<uint8_t>(c)) * 1099511628211ull;
  data.fill(key, h & 0xffffffff000ull, v);
  return v;
}

}  // namespace fsrr
