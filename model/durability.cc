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

// An op that overlaps a file's earlier promise does not move it later.
void durability_oracle::promise(file_state& f, const event& by) {
  if (f.promised && !f.dirty) {
    f.old_paths.clear();
    return;
  }
  f.dirty = false;
  f.promised = true;
  f.old_paths.clear();
  f.by = seq_;
  f.by_end = by.ts + by.dur;
}

static bool under(const std::string& path, const std::string& dir) {
  return path.size() > dir.size() && path.compare(0, dir.size(), dir) == 0 &&
         path[dir.size()] == '/';
}

// A rename of a file the workload never opened (an initial-tree file: promised as it was, by
// either name until the new one is durable), or of a directory (what was beneath it moves).
void durability_oracle::note_rename(const event& e, const expected_state& before) {
  const std::string to = trace_.placed_path(e.path2), from = trace_.placed_path(e.path);
  const auto it = before.find(from);
  // (a rename's file is not always known to the trace: what stood at `from` says what it was)
  const bool dir = S_ISDIR(trace_.file(e.file).type) ||
                   (it != before.end() && !it->second.absent && S_ISDIR(it->second.mode));
  if (dir) {
    // beneath it, every name a file may be found by gains its moved twin
    auto moved = [&](const std::string& p) { return to + p.substr(from.size()); };
    for (auto& [id, f] : files_) {
      std::vector<std::string> more;
      for (const std::string& p : f.old_paths)
        if (under(p, from)) more.push_back(moved(p));
      if (under(f.path, from)) {
        f.old_paths.push_back(f.path);
        f.path = moved(f.path);
      }
      f.old_paths.insert(f.old_paths.end(), more.begin(), more.end());
    }
    moves_.push_back({from, to, true});
    // an earlier move beneath it may or may not be durable with it: its twin beneath `to`
    for (size_t k = 0, n = moves_.size() - 1; k < n; ++k)
      if (under(moves_[k].from, from) && under(moves_[k].to, from))
        moves_.push_back({moved(moves_[k].from), moved(moves_[k].to), moves_[k].dir});
    return;
  }
  if (e.file == no_id) {  // untracked: the initial tree's entry, moved with the model
    moves_.push_back({from, to, false});
    return;
  }
  if (files_.count(e.file)) return;
  file_state f;
  f.path = to;
  f.old_paths = {from};
  if (it != before.end() && !it->second.absent && S_ISREG(it->second.mode) &&
      it->second.tree_index != SIZE_MAX && !it->second.changed) {
    f.dirty = false;
    f.promised = f.initial = true;
  }
  files_[e.file] = std::move(f);
}

static bool is_rename(op k) { return k == op::rename || k == op::renameat || k == op::renameat2; }

// A rename over a promised file (or over one that replaced it, while the name is not durable
// yet): the file it replaces, as it is just before, for promised().
void durability_oracle::note_replacement(const event& e, const expected_state& now) {
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
  if (e.result >= 0 && is_rename(e.kind)) {
    // the state just before: what the rename replaces, and what it moves
    const expected_state before = model_.result();
    note_replacement(e, before);
    note_rename(e, before);
  }
  if ((e.kind == op::unlink || e.kind == op::unlinkat) && e.result >= 0) {
    const std::string gone = trace_.placed_path(e.path);
    std::erase_if(replacements_, [&](const replacement& r) { return r.path == gone; });
  }
  model_.apply(e);
  if (cls == op_class::stream) return;
  last_seq_ = seq_;
  last_ts_ = e.ts;
  if (e.result >= 0) {
    auto known = [&](file_id id) -> file_state* {
      if (id == no_id) return nullptr;
      auto it = files_.find(id);
      return it == files_.end() ? nullptr : &it->second;
    };
    switch (cls) {
      case op_class::open: {
        if (e.file == no_id) break;
        // creat(2) is open with these (its flags are not recorded)
        const uint32_t flags = e.kind == op::creat ? O_CREAT | O_WRONLY | O_TRUNC : e.flags;
        const bool seen = files_.count(e.file) != 0;
        file_state& f = files_[e.file];
        if (!seen) {
          f.path = trace_.placed_path(e.path);
          // A file opened without O_CREAT was there: the initial tree's, synced before the
          // replay. One opened with it may be new: promised only once synced.
          if (!(flags & (O_CREAT | O_TRUNC))) {
            f.dirty = false;
            f.promised = f.initial = true;
          }
        } else if (flags & O_TRUNC) {
          f.dirty = true;
        }
        if (!(flags & O_DSYNC)) f.plain_open = true;
        break;
      }
      case op_class::write:
      case op_class::resize:
        std::erase_if(replacements_, [&](const replacement& r) { return r.by == e.file; });
        if (file_state* f = known(e.file)) {
          f->dirty = true;
          if (!f->plain_open && (e.kind != op::ftruncate && e.kind != op::truncate &&
                                 e.kind != op::fallocate))
            promise(*f, e);  // every open of it had O_DSYNC
        } else if (e.file != no_id) {  // (truncate by name): changed, never promised since
          files_[e.file].path = has(e.kind, F_PATH) ? trace_.placed_path(e.path) : "";
        }
        break;
      case op_class::copy:
      case op_class::ioctl:
        for (file_id id : {e.file, e.file2}) {
          if (e.kind == op::splice && id == e.file) continue;  // the side read (or a pipe)
          std::erase_if(replacements_, [&](const replacement& r) { return r.by == id; });
          if (file_state* f = known(id))
            f->dirty = true;
          else if (id != no_id)
            files_[id];  // changed, name unknown: never promised
        }
        break;
      case op_class::sync:
        if (e.kind == op::sync || e.kind == op::syncfs) {
          for (auto& [id, f] : files_) promise(f, e);
          replacements_.clear();
          moves_.clear();
        } else if (e.kind == op::fsync || e.kind == op::fdatasync) {
          // the new file's own promise covers its name from here
          std::erase_if(replacements_, [&](const replacement& r) { return r.by == e.file; });
          if (file_state* f = known(e.file)) {
            promise(*f, e);
            if (S_ISDIR(trace_.file(e.file).type))
              std::erase_if(moves_, [&](const move& m) { return parent_of(m.to) == f->path; });
            if (S_ISDIR(trace_.file(e.file).type))
              std::erase_if(replacements_,
                            [&](const replacement& r) { return parent_of(r.path) == f->path; });
            // a directory's fsync keeps the names in it: renamed files are found by the new one
            if (S_ISDIR(trace_.file(e.file).type))
              for (auto& [id, g] : files_)
                if (parent_of(g.path) == f->path) g.old_paths.clear();
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
          if (!f || f->path == to) break;  // (note_rename made it)
          f->old_paths.push_back(from);
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
      // untouched since the initial tree; beneath a renamed directory, by either name
      if (entry.tree_index == SIZE_MAX || entry.changed) continue;
      promised_file* p = add(path, entry);
      p->initial = true;
      // the names it had before each move since (of it, or of a directory above it), newest
      // move first
      std::vector<std::string> names{path};
      for (auto m = moves_.rbegin(); m != moves_.rend(); ++m)
        for (size_t k = 0, n = names.size(); k < n; ++k) {
          std::string was;
          if (m->dir && under(names[k], m->to))
            was = m->from + names[k].substr(m->to.size());
          else if (!m->dir && names[k] == m->to)
            was = m->from;
          if (!was.empty() && std::find(names.begin(), names.end(), was) == names.end())
            names.push_back(std::move(was));
        }
      p->old_paths.assign(names.begin() + 1, names.end());
      continue;
    }
    const file_state& f = *it->second;
    // promised by an op that had returned before the crash point's op started, or by it
    if (!f.promised || f.dirty || (f.by != last_seq_ && f.by_end > last_ts_)) continue;
    promised_file* p = add(path, entry);
    p->old_paths = f.old_paths;
    p->by = f.by;
    p->initial = f.initial;
  }
  return out;
}

}  // namespace fsrr
