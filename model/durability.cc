#include "durability.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>

namespace fsrr {
namespace {

std::string parent_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos || slash == 0 ? "/" : path.substr(0, slash);
}

}  // namespace

bool promises_durability(const event& e, uint32_t open_flags) {
  if (e.result < 0) return false;
  switch (e.kind) {
    case op::fsync:
    case op::fdatasync:
    case op::syncfs:
    case op::sync:
      return true;
    default:
      return info(e.kind).cls == op_class::write && (open_flags & O_DSYNC);
  }
}

durability_oracle::durability_oracle(trace_reader& trace)
    : trace_(trace), model_(trace, model_content::yes) {}
durability_oracle::~durability_oracle() = default;

void durability_oracle::promise(file_state& f) {
  f.dirty = false;
  f.promised = true;
  f.old_path.clear();
  f.by = seq_;
}

static bool is_rename(op k) { return k == op::rename || k == op::renameat || k == op::renameat2; }

// A rename over a promised file (or over one that replaced it, while the name is not durable
// yet): the file it replaces, as it is just before, for promised().
void durability_oracle::note_replacement(const event& e) {
  const std::string to = trace_.placed_path(e.path2);
  auto chain = std::find_if(replacements_.begin(), replacements_.end(),
                            [&](const replacement& r) { return r.path == to; });
  bool promised_before = false;
  bool tracked = false;
  for (const auto& [id, f] : files_)
    if (id != e.file && f.path == to) {
      tracked = true;
      promised_before = f.promised && !f.dirty;
    }
  if (chain == replacements_.end() && tracked && !promised_before) return;
  // (an untracked name: the initial tree's, promised if the trace never changed it)
  const expected_state now = model_.result();
  const auto it = now.find(to);
  const bool there = it != now.end() && !it->second.absent && S_ISREG(it->second.mode);
  if (chain != replacements_.end()) {
    if (there) chain->before.push_back(it->second);
    chain->by = e.file;
    chain->seq = seq_;
    return;
  }
  if (!there || (!tracked && (it->second.tree_index == SIZE_MAX || it->second.changed))) return;
  replacements_.push_back({to, {it->second}, e.file, seq_});
}

void durability_oracle::apply(const event& e) {
  const op_class cls = info(e.kind).cls;
  if (e.result >= 0 && is_rename(e.kind)) note_replacement(e);
  if ((e.kind == op::unlink || e.kind == op::unlinkat) && e.result >= 0) {
    const std::string gone = trace_.placed_path(e.path);
    std::erase_if(replacements_, [&](const replacement& r) { return r.path == gone; });
  }
  model_.apply(e);
  if (cls == op_class::stream) return;
  if (e.result >= 0) {
    auto known = [&](file_id id) -> file_state* {
      if (id == no_id) return nullptr;
      auto it = files_.find(id);
      return it == files_.end() ? nullptr : &it->second;
    };
    switch (cls) {
      case op_class::open: {
        if (e.file == no_id) break;
        const bool seen = files_.count(e.file) != 0;
        file_state& f = files_[e.file];
        if (!seen) {
          f.path = trace_.placed_path(e.path);
          // A file opened without O_CREAT was there: the initial tree's, synced before the
          // replay. One opened with it may be new: promised only once synced.
          if (!(e.flags & (O_CREAT | O_TRUNC))) {
            f.dirty = false;
            f.promised = f.initial = true;
          }
        } else if (e.flags & O_TRUNC) {
          f.dirty = true;
        }
        if (!(e.flags & O_DSYNC)) f.plain_open = true;
        break;
      }
      case op_class::write:
      case op_class::resize:
        std::erase_if(replacements_, [&](const replacement& r) { return r.by == e.file; });
        if (file_state* f = known(e.file)) {
          f->dirty = true;
          if (!f->plain_open && (e.kind != op::ftruncate && e.kind != op::truncate &&
                                 e.kind != op::fallocate))
            promise(*f);  // every open of it had O_DSYNC
        }
        break;
      case op_class::copy:
      case op_class::ioctl:
        for (file_id id : {e.file, e.file2}) {
          std::erase_if(replacements_, [&](const replacement& r) { return r.by == id; });
          if (file_state* f = known(id)) f->dirty = true;
        }
        break;
      case op_class::sync:
        if (e.kind == op::sync || e.kind == op::syncfs) {
          for (auto& [id, f] : files_) promise(f);
          replacements_.clear();
        } else if (e.kind == op::fsync || e.kind == op::fdatasync) {
          // the new file's own promise covers its name from here
          std::erase_if(replacements_, [&](const replacement& r) { return r.by == e.file; });
          if (file_state* f = known(e.file)) {
            promise(*f);
            if (S_ISDIR(trace_.file(e.file).type))
              std::erase_if(replacements_,
                            [&](const replacement& r) { return parent_of(r.path) == f->path; });
            // a directory's fsync keeps the names in it: renamed files are found by the new one
            if (S_ISDIR(trace_.file(e.file).type))
              for (auto& [id, g] : files_)
                if (parent_of(g.path) == f->path) g.old_path.clear();
          }
        }
        break;
      case op_class::name:
        if (e.kind == op::unlink || e.kind == op::unlinkat) {
          const std::string gone = trace_.placed_path(e.path);
          std::erase_if(files_, [&](const auto& kv) { return kv.second.path == gone; });
        } else if (e.kind == op::rename || e.kind == op::renameat || e.kind == op::renameat2) {
          const std::string to = trace_.placed_path(e.path2), from = trace_.placed_path(e.path);
          std::erase_if(files_, [&](const auto& kv) {
            return kv.second.path == to && kv.first != e.file;
          });
          file_state* f = known(e.file);
          if (!f) break;  // not opened before: its state unknown, never promised
          if (f->old_path.empty()) f->old_path = from;
          f->path = to;
        }
        break;
      default:
        break;
    }
  }
  ++seq_;
}

std::vector<promised_file> durability_oracle::promised() {
  std::vector<promised_file> out;
  const expected_state state = model_.result();
  auto add = [&](const std::string& path, const expected_entry& entry) {
    promised_file p;
    p.path = path;
    p.entry = entry;
    p.entry.check_mode = p.entry.check_mtime = p.entry.check_owner = p.entry.check_xattrs = false;
    p.entry.link_group = 0;
    out.push_back(std::move(p));
    return &out.back();
  };
  std::unordered_map<std::string, const file_state*> by_path;
  for (const auto& [id, f] : files_) by_path[f.path] = &f;
  for (const replacement& r : replacements_) {
    auto it = state.find(r.path);
    if (it == state.end() || it->second.absent) continue;
    promised_file* p = add(r.path, it->second);
    p->replaced = true;
    p->by = r.seq;
    p->before = r.before;
    for (expected_entry& b : p->before) {
      b.check_mode = b.check_mtime = b.check_owner = b.check_xattrs = false;
      b.link_group = 0;
    }
  }
  for (const auto& [path, entry] : state) {
    if (entry.absent || !S_ISREG(entry.mode)) continue;
    auto it = by_path.find(path);
    if (it == by_path.end()) {
      // untouched since the initial tree
      if (entry.tree_index != SIZE_MAX && !entry.changed) add(path, entry)->initial = true;
      continue;
    }
    const file_state& f = *it->second;
    if (!f.promised || f.dirty) continue;
    promised_file* p = add(path, entry);
    p->old_path = f.old_path;
    p->by = f.by;
    p->initial = f.initial;
  }
  return out;
}

}  // namespace fsrr
