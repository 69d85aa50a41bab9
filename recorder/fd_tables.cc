#include "fd_tables.h"

#include <algorithm>

namespace fsrr::recorder {
namespace {

constexpr size_t max_fd = 1u << 20;  // beyond RLIMIT_NOFILE's usual ceiling

bool valid(const fd_entry& e) {
  return e.kfile != 0 || e.file != no_id;
}

}  // namespace

fd_tables::table& fd_tables::get(uint64_t files) {
  auto [it, added] = tables_.try_emplace(files);
  if (added) it->second.id = ++next_id_;
  return it->second;
}

uint32_t fd_tables::id_of(uint64_t files) {
  return files ? get(files).id : 0;
}

const fd_entry* fd_tables::find(uint64_t files, int fd) const {
  const auto it = tables_.find(files);
  if (it == tables_.end() || fd < 0 || static_cast<size_t>(fd) >= it->second.fds.size())
    return nullptr;
  const fd_entry& e = it->second.fds[static_cast<size_t>(fd)];
  return valid(e) ? &e : nullptr;
}

const fd_entry* fd_tables::find(uint64_t files, int fd, uint64_t kfile) const {
  if (const fd_entry* e = find(files, fd); e && e->kfile == kfile) return e;
  const auto it = tables_.find(files);
  if (it == tables_.end() || it->second.displaced.empty()) return nullptr;
  const auto d = it->second.displaced.find(fd);
  return d != it->second.displaced.end() && d->second.kfile == kfile ? &d->second : nullptr;
}

int fd_tables::fd_of_file(uint64_t files, uint64_t kfile) const {
  const auto it = tables_.find(files);
  if (it == tables_.end() || !kfile) return -1;
  const auto& fds = it->second.fds;
  for (size_t fd = 0; fd < fds.size(); ++fd)
    if (fds[fd].kfile == kfile) return static_cast<int>(fd);
  return -1;
}

void fd_tables::bind(uint64_t files, int fd, const fd_entry& e) {
  if (fd < 0 || static_cast<size_t>(fd) >= max_fd) return;
  table& t = get(files);
  if (static_cast<size_t>(fd) >= t.fds.size()) t.fds.resize(static_cast<size_t>(fd) + 1);
  fd_entry& slot = t.fds[static_cast<size_t>(fd)];
  if (valid(slot) && slot.kfile != e.kfile) t.displaced[fd] = slot;
  slot = e;
}

void fd_tables::unbind(uint64_t files, int fd) {
  auto it = tables_.find(files);
  if (it == tables_.end() || fd < 0 || static_cast<size_t>(fd) >= it->second.fds.size()) return;
  it->second.fds[static_cast<size_t>(fd)] = {};
  it->second.displaced.erase(fd);
}

void fd_tables::unbind(uint64_t files, int fd, uint64_t kfile) {
  auto it = tables_.find(files);
  if (it == tables_.end() || fd < 0 || static_cast<size_t>(fd) >= it->second.fds.size()) return;
  table& t = it->second;
  fd_entry& slot = t.fds[static_cast<size_t>(fd)];
  if (slot.kfile == kfile) {
    slot = {};  // a displaced binding stays: its own close may still come
  } else if (const auto d = t.displaced.find(fd); d != t.displaced.end() && d->second.kfile == kfile) {
    t.displaced.erase(d);  // the late close of the file the number meant before
  }
}

void fd_tables::unbind_range(uint64_t files, uint32_t first, uint32_t last) {
  auto it = tables_.find(files);
  if (it == tables_.end()) return;
  auto& fds = it->second.fds;
  for (size_t fd = first; fd < fds.size() && fd <= last; ++fd) fds[fd] = {};
  std::erase_if(it->second.displaced, [&](const auto& d) {
    return static_cast<uint32_t>(d.first) >= first && static_cast<uint32_t>(d.first) <= last;
  });
}

void fd_tables::set_cloexec(uint64_t files, int fd, bool on) {
  auto it = tables_.find(files);
  if (it == tables_.end() || fd < 0 || static_cast<size_t>(fd) >= it->second.fds.size()) return;
  it->second.fds[static_cast<size_t>(fd)].cloexec = on;
}

void fd_tables::cloexec_range(uint64_t files, uint32_t first, uint32_t last) {
  auto it = tables_.find(files);
  if (it == tables_.end()) return;
  auto& fds = it->second.fds;
  for (size_t fd = first; fd < fds.size() && fd <= last; ++fd) fds[fd].cloexec = true;
}

void fd_tables::copy(uint64_t from, uint64_t to) {
  if (from == to) return;
  const auto it = tables_.find(from);
  table& dst = get(to);
  dst.fds = it == tables_.end() ? std::vector<fd_entry>{} : it->second.fds;
  dst.displaced.clear();
}

void fd_tables::exec(uint64_t files) {
  auto it = tables_.find(files);
  if (it == tables_.end()) return;
  for (auto& e : it->second.fds)
    if (e.cloexec) e = {};
  it->second.displaced.clear();
}

void fd_tables::release(uint64_t files) {
  tables_.erase(files);
}

size_t fd_tables::entries() const {
  size_t n = cwd_.size();
  for (const auto& [files, t] : tables_) n += t.fds.size() + t.displaced.size();
  return n;
}

path_id fd_tables::cwd(uint64_t fs) const {
  const auto it = cwd_.find(fs);
  return it == cwd_.end() ? no_id : it->second;
}

void fd_tables::copy_cwd(uint64_t from, uint64_t to) {
  if (from == to) return;
  if (const path_id p = cwd(from)) cwd_[to] = p;
}

}  // namespace fsrr::recorder
