#include "raw_record.h"

namespace fsrr::recorder {

bool parse_items(std::span<const uint8_t> record, size_t header_len, record_items& out) {
  size_t at = header_len;
  while (at + sizeof(fsrr_item) <= record.size()) {
    const auto* it = reinterpret_cast<const fsrr_item*>(record.data() + at);
    const size_t payload = at + sizeof(fsrr_item);
    if (it->len > record.size() - payload || it->slot > (it->kind == FSRR_I_U64 ? 3 : 2))
      return false;
    const std::span<const uint8_t> data = record.subspan(payload, it->len);
    switch (it->kind) {
      case FSRR_I_FILE:
        if (data.size() != sizeof(fsrr_file)) return false;
        out.file[it->slot] = reinterpret_cast<const fsrr_file*>(data.data());
        break;
      case FSRR_I_FDREF:
        if (data.size() != sizeof(fsrr_fdref)) return false;
        out.ref[it->slot] = reinterpret_cast<const fsrr_fdref*>(data.data());
        break;
      case FSRR_I_ATTR:
        if (data.size() != sizeof(fsrr_attr)) return false;
        out.attr[it->slot] = reinterpret_cast<const fsrr_attr*>(data.data());
        break;
      case FSRR_I_STR:
        out.str[it->slot] =
            std::string_view(reinterpret_cast<const char*>(data.data()), data.size());
        break;
      case FSRR_I_WALK:
        out.walk[it->slot] = {data, it->flags, true};
        break;
      case FSRR_I_USER:
        out.user = data;
        break;
      case FSRR_I_U64:
        if (data.size() != sizeof(uint64_t)) return false;
        out.u64[it->slot] = *reinterpret_cast<const uint64_t*>(data.data());
        break;
      case FSRR_I_AIO:
        if (it->slot > 1) return false;
        out.aio[it->slot] = data;
        break;
      default:
        return false;
    }
    at = payload + ((it->len + 7u) & ~7u);
  }
  return at == record.size();
}

}  // namespace fsrr::recorder
