// What a replay's threads share (op_dispatch.h): the trace's paths resolved beneath the target
// and kept in generations, the table of replayed open files, and the stop any of them may ask.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <string>

#include "op_dispatch.h"
#include "syscall_result.h"

namespace fsrr {

namespace {

// The placed trace path of `p` (trace_reader::placed_path) without its leading "/" for "/"
// itself. A top's `last` is empty, or with several roots its root's "rootN".
void append_trace_path(const resolved_path& p, std::string& out) {
  std::vector<const resolved_path*> chain;  // leaf first: no recursion, whatever the depth
  for (const resolved_path* q = &p; q; q = q->up) chain.push_back(q);
  for (auto it = chain.rbegin(); it != chain.rend(); ++it)
    if ((*it)->up || !(*it)->last.empty()) {
      out += '/';
      out += (*it)->last;
    }
}

}  // namespace

std::string resolved_path::trace_path() const {
  std::string s;
  append_trace_path(*this, s);
  return s.empty() ? "/" : s;
}

path_cache::path_cache(trace_reader& reader, const target_root& target, size_t generation)
    : reader_(reader),
      target_(target),
      generation_(std::max<size_t>(generation, 1)),
      index_(reader.path_count() + 1),
      current_(std::make_unique<struct generation>()) {}

path_cache::~path_cache() = default;

const resolved_path* path_cache::get(path_id id) {
  if (id == no_id || id >= index_.size()) return nullptr;
  if (current(index_[id])) return index_[id];
  // Ancestors first, from the nearest current one: no recursion, whatever the depth.
  std::vector<path_id> chain;
  for (path_id q = reader_.path(id).parent; q != no_id && q < index_.size() && !current(index_[q]);
       q = reader_.path(q).parent)
    chain.push_back(q);
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) resolve(*it);
  return resolve(id);
}

void path_cache::retire(std::vector<dependency> until) {
  current_->until = std::move(until);
  const uint32_t next = current_->number + 1;
  retired_.push_back(std::move(current_));
  current_ = std::make_unique<generation>();
  current_->number = next;
  collect();
}

void path_cache::collect() {
  // Oldest first: a generation's ops were queued before a later one's.
  while (!retired_.empty() &&
         std::all_of(retired_.front()->until.begin(), retired_.front()->until.end(),
                     [](const dependency& d) { return d.lane->reached(d.count); })) {
    free(*retired_.front());
    retired_.pop_front();
  }
}

void path_cache::drop_retired() {
  for (auto& g : retired_) free(*g);
  retired_.clear();
}

void path_cache::free(generation& g) {
  for (const resolved_path& p : g.entries)
    if (index_[p.id] == &p) index_[p.id] = nullptr;
}

size_t path_cache::live_entries() const {
  size_t n = current_->entries.size();
  for (const auto& g : retired_) n += g->entries.size();
  return n;
}

const resolved_path* path_cache::resolve(path_id id) {
  if (current(index_[id])) return index_[id];
  const path_entry& entry = reader_.path(id);
  const bool top = entry.parent == no_id;
  const resolved_path* up = top || entry.parent >= index_.size() ? nullptr : index_[entry.parent];
  resolved_path& p = current_->entries.emplace_back();
  p.gen = current_->number;
  p.id = id;
  p.parent = entry.parent;
  p.up = up;
  p.last = entry.name;
  if (top && id == root_path && reader_.roots().size() > 1) p.last = "root1";
  scratch_.clear();
  if (top && !p.last.empty()) {
    scratch_ = '/';
    scratch_ += p.last;
  } else if (up) {
    auto cached = std::find_if(parents_.begin(), parents_.end(),
                               [&](const parent_path& c) { return c.id == entry.parent; });
    if (cached == parents_.end()) {
      cached = parents_.begin() + next_parent_++ % parents_.size();
      cached->id = entry.parent;
      cached->path.clear();
      append_trace_path(*up, cached->path);
    }
    scratch_ = cached->path;
    scratch_ += '/';
    scratch_ += entry.name;
  }
  if (auto at = target_.locate(scratch_.empty() ? "/" : scratch_)) {
    p.ok = true;
    p.at = std::move(*at);
    const size_t slash = p.at.rel.rfind('/');
    p.name_at = slash == std::string::npos ? 0 : slash + 1;
  }
  index_[id] = &p;
  return &p;
}

handle_table::handle_table() : chunks_(new std::atomic<handle_slot*>[max_chunks]) {
  for (size_t i = 0; i < max_chunks; ++i) chunks_[i].store(nullptr, std::memory_order_relaxed);
}

handle_table::~handle_table() {
  for (size_t i = 0; i < made_; ++i) delete[] chunks_[i].load(std::memory_order_relaxed);
}

void handle_table::ensure(size_t count) {
  while (made_ * chunk_size < count && made_ < max_chunks)
    chunks_[made_++].store(new handle_slot[chunk_size], std::memory_order_release);
}

void handle_table::close_all() {
  for (size_t c = 0; c < made_; ++c) {
    handle_slot* s = chunks_[c].load(std::memory_order_relaxed);
    for (size_t i = 0; i < chunk_size; ++i)
      if (s[i].fd >= 0) {
        ::close(s[i].fd);
        s[i].fd = -1;
      }
  }
}

replay_shared::replay_shared(const target_root& t, const data_source& d) : target(t), data(d) {
  zero_data = d.spec().kind == data_kind::zero && d.spec().dedupe_pct == 0;
  sink = map_buffer(sink_bytes);
}

replay_shared::~replay_shared() {
  if (!sink.empty()) ::munmap(sink.data(), sink.size());
}

void replay_shared::request_stop(const std::string& why) {
  std::lock_guard lock(mu_);
  if (reason_.empty()) reason_ = why;
  stop.store(true, std::memory_order_release);
}

std::string replay_shared::stop_reason() const {
  std::lock_guard lock(mu_);
  return reason_;
}

}  // namespace fsrr
