#include "end_state.h"

#include <fcntl.h>
#include <linux/falloc.h>
#include <linux/fs.h>
#include <sys/stat.h>

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <tuple>
#include <unordered_map>

#include "end_state_core.h"

namespace fsrr {

void end_state_core::apply(const event& e) {
  fd_effect fx;
  fds_.apply(e, fx);
  if (flow_) flow_->apply(e, fx, fds_);
  // Handles the event let go of are free for the next open: without this the handle table
  // grows with every open of the trace (a tenth of verify's memory), not with its open fds.
  for (const handle_id h : fx.released) fds_.recycle(h);
  if (e.result < 0) return;
  switch (e.kind) {
    case op::open:
    case op::openat:
    case op::openat2:
    case op::creat:
      return open(e);
    case op::fd_bind:  // a file found open: the one at its path
      if (const name_tree::id n = e.file ? find(path(e.path)) : name_tree::none;
          n != name_tree::none)
        bind(e.file, tree_.value(n));
      return;
    case op::write:
    case op::pwrite64:
    case op::writev:
    case op::pwritev:
    case op::pwritev2:
      return grow(file(e.file), e.offset + e.result);
    case op::copy_file_range:  // out at its position (which fd_map has moved) or at offset2
      return grow(file(e.file2),
                  fx.pos2 ? (fx.h2 ? fds_.handle(fx.h2).pos : 0) : e.offset2 + e.result);
    case op::splice:  // into a file from a pipe: at its position or at offset2, as above
      if (e.file2 != no_id && e.file == no_id && fx.h2)
        grow(file(e.file2), fx.pos2 ? fds_.handle(fx.h2).pos
                                    : (e.offset2 > INT64_MAX - e.result ? INT64_MAX
                                                                        : e.offset2 + e.result));
      return;
    case op::sendfile:  // out at its position, which fd_map has just moved past the data
      if (fx.h1) grow(file(e.file), fds_.handle(fx.h1).pos);
      return;
    case op::ioctl:
      return clone(e);
    case op::ftruncate:
      return resize(file(e.file), e.size);
    case op::truncate:
      return resize(at(e.path), e.size);
    case op::fallocate:
      return allocate(e);
    case op::mkdir:
    case op::mkdirat:
      return place(e.path, new_object(S_IFDIR));
    case op::mknod:
    case op::mknodat:
      if (S_ISCHR(e.mode) || S_ISBLK(e.mode)) return;  // never created by a replay
      return place(e.path, new_object((e.mode & S_IFMT) ? e.mode & S_IFMT : S_IFREG));
    case op::bind:
      return place(e.path, new_object(S_IFSOCK));
    case op::symlink:
    case op::symlinkat: {
      const object_id o = new_object(S_IFLNK);
      if (e.aux) more(objects_[o]).target = r_.string(static_cast<string_id>(e.aux));
      return place(e.path, o);
    }
    case op::link:
    case op::linkat:
      if (const name_tree::id n = e.path ? find(path(e.path)) : name_tree::none;
          n != name_tree::none)
        place(e.path2, tree_.value(n));
      return;
    case op::unlink:
    case op::unlinkat:
    case op::rmdir:
      return remove(e.path);
    case op::rename:
    case op::renameat:
    case op::renameat2:
      return rename(e);
    case op::chmod:
    case op::fchmodat:
    case op::fchmodat2:
      return set_mode(at(e.path), e.mode);
    case op::fchmod:
      return set_mode(file(e.file), e.mode);
    case op::chown:
    case op::lchown:
    case op::fchownat:
    case op::fchown:
      return set_owner(e.path && e.kind != op::fchown ? at(e.path) : file(e.file), e.aux);
    case op::utime:
    case op::utimes:
    case op::futimesat:
    case op::utimensat:
      return set_mtime(e.path && !(has(e.kind, F_FD) && e.fd >= 0) ? at(e.path) : file(e.file),
                       e.offset2);
    case op::setxattr:
    case op::lsetxattr:
    case op::fsetxattr:
    case op::removexattr:
    case op::lremovexattr:
    case op::fremovexattr:
    case op::setxattrat:
    case op::removexattrat:
      return xattr(e);
    default:
      return;
  }
}

// Its target and xattrs, to be changed: from its tree entry the first time.
end_state_core::extra& end_state_core::more(object& o) {
  if (!o.more) {
    o.more = std::make_unique<extra>();
    if (o.tree != no_tree) {
      const tree_entry& e = r_.tree()[o.tree];
      if (S_ISLNK(e.mode)) o.more->target = r_.string(e.target);
      for (const auto& a : e.xattrs) o.more->xattrs.emplace_back(r_.string(a.name), a.size);
      std::sort(o.more->xattrs.begin(), o.more->xattrs.end());
    }
  }
  return *o.more;
}

// "/a/b" -> ("/a", "b"); "/b" -> ("/", "b"), after lexical clean-up of empty components.
std::pair<std::string, std::string> end_state_core::split(std::string_view p) {
  std::string parent, last;
  for_components(p, [&](std::string_view c) {
    if (!last.empty()) parent += "/" + last;
    last = c;
  });
  return {parent.empty() ? "/" : parent, last};
}

void end_state_core::bind(file_id f, ref v) {
  if (f >= files_.size()) return;
  files_[f] = v;
  // A tree entry with a file id of its own keeps it (its object, when made, has it too).
  if (resolved(v) == none && tree_file(v & ~tree_ref)) return;
  object& o = obj(v);
  if (!o.file) o.file = f;
}

// The node at `p`, out of the namespace with all below it (to attach() or drop()).
std::optional<name_tree::id> end_state_core::detach(const std::string& p) {
  if (!has_name(p)) return std::nullopt;
  const auto [dir, name] = split(p);
  const name_tree::id parent = find(dir);
  if (parent == name_tree::none) return std::nullopt;
  const name_tree::id n = tree_.child(parent, name);
  if (n == name_tree::none) return std::nullopt;
  tree_.unlink(n);
  changed(&obj(tree_.value(parent)));
  return n;
}

void end_state_core::attach(path_id id, std::optional<name_tree::id> t) {
  if (!t) return;
  const std::string p = path(id);
  if (!has_name(p)) return tree_.drop(*t);
  const auto [dir, name] = split(p);
  const name_tree::id d = make(dir);
  if (const name_tree::id old = tree_.child(d, name); old != name_tree::none) {
    tree_.unlink(old);
    tree_.drop(old);
  }
  tree_.link(*t, d, name, leaf_ref(id));
  changed(&obj(tree_.value(d)));
}

void end_state_core::open(const event& e) {
  const uint32_t flags =
      e.kind == op::creat ? static_cast<uint32_t>(O_CREAT | O_WRONLY | O_TRUNC) : e.flags;
  const std::string p = path(e.path);
  name_tree::id n = find(p);
  if (n == name_tree::none && (flags & O_CREAT) && has_name(p)) {
    n = make(p, new_object(S_IFREG), leaf_ref(e.path));
    parent_changed(p);
  }
  if (n == name_tree::none) return;
  const ref v = tree_.value(n);
  if ((flags & O_TRUNC) && (flags & O_ACCMODE) != O_RDONLY && S_ISREG(mode_of(v)))
    resize(&obj(v), 0);
  if (e.file) bind(e.file, v);
}

void end_state_core::rename(const event& e) {
  const std::string from = path(e.path), to = path(e.path2);
  if (from.empty() || to.empty() || from == to) return;
  if (e.flags & RENAME_EXCHANGE) {
    const auto a = detach(from), b = detach(to);
    attach(e.path2, a);
    attach(e.path, b);
    return;
  }
  const name_tree::id a = find(from), b = find(to);
  if (a == name_tree::none) return;
  if (b != name_tree::none && same(tree_.value(a), tree_.value(b)))
    return;  // two names of one inode: rename(2) leaves both
  auto n = detach(from);
  if (auto gone = detach(to)) tree_.drop(*gone);
  note_removed(e.path);
  attach(e.path2, n);
}

void end_state_core::clone(const event& e) {
  object* dst = file(e.file);
  object* src = file(e.file2);
  if (!dst || !src) return;
  if (e.aux == FICLONE)
    resize(dst, src->size);
  else if (e.aux == FICLONERANGE)
    grow(dst, e.offset2 + static_cast<int64_t>(e.size ? e.size : src->size - e.offset));
}

void end_state_core::allocate(const event& e) {
  object* o = file(e.file);
  if (!o) return;
  if (e.flags & FALLOC_FL_COLLAPSE_RANGE)
    resize(o, o->size > e.size ? o->size - e.size : 0);
  else if (e.flags & FALLOC_FL_INSERT_RANGE)
    resize(o, o->size + e.size);
  else if (!(e.flags & FALLOC_FL_KEEP_SIZE))
    grow(o, e.offset + static_cast<int64_t>(e.size));
}

void end_state_core::xattr(const event& e) {
  const bool by_fd = !has(e.kind, F_PATH) || e.fd >= 0;  // the f* calls, and AT_EMPTY_PATH
  object* o = by_fd ? file(e.file) : at(e.path);
  if (!o || !e.aux) return;
  o->touched = true;
  const std::string& name = r_.string(static_cast<string_id>(e.aux));
  auto& v = more(*o).xattrs;
  std::erase_if(v, [&](const auto& a) { return a.first == name; });
  const bool set = e.kind == op::setxattr || e.kind == op::lsetxattr || e.kind == op::fsetxattr ||
                   e.kind == op::setxattrat;
  if (set) {
    v.emplace_back(name, static_cast<uint32_t>(e.size));
    std::sort(v.begin(), v.end());
  }
  // An access ACL sets the permission bits (cp -a gives a copy its mode this way).
  if (set && name == "system.posix_acl_access" && (e.mode & acl_mode_present)) {
    o->check_mode = true;
    o->mode = (o->mode & ~0777u) | (e.mode & 0777);
  }
}

void end_state_core::set_owner(object* o, uint64_t aux) {
  if (!o) return;
  const uint32_t uid = static_cast<uint32_t>(aux >> 32), gid = static_cast<uint32_t>(aux);
  if (!o->check_owner && (uid == UINT32_MAX || gid == UINT32_MAX)) return;
  o->touched = true;
  o->check_owner = true;
  const auto [was_uid, was_gid] = owner(*o);
  const std::pair<uint32_t, uint32_t> now{uid != UINT32_MAX ? uid : was_uid,
                                          gid != UINT32_MAX ? gid : was_gid};
  const auto [at, added] = owner_ids_.try_emplace(now, static_cast<uint32_t>(owners_.size()));
  if (added) owners_.push_back(now);
  o->owner = at->second;
  // A chown clears a non-directory's set-uid bit, and its set-gid bit where that means
  // set-group-id rather than mandatory locking (group execute on), whoever calls it.
  if (!S_ISDIR(o->mode)) {
    o->mode &= ~uint32_t{S_ISUID};
    if (o->mode & S_IXGRP) o->mode &= ~uint32_t{S_ISGID};
  }
}

end_state_model::end_state_model(trace_reader& trace, model_content content)
    : core_(std::make_unique<end_state_core>(trace, content)) {
  core_->load_tree();
}
end_state_model::~end_state_model() = default;
void end_state_model::apply(const event& e) {
  core_->apply(e);
}
expected_state end_state_model::result() {
  return core_->result();
}
expected_state end_state_model::take() {
  expected_state s;
  core_->take(SIZE_MAX, [&](expected_state& part) { s = std::move(part); });
  return s;
}
void end_state_model::take(size_t batch, const std::function<void(expected_state&)>& each) {
  core_->take(batch, each);
}
const fd_map& end_state_model::fds() const {
  return core_->fds();
}

result<expected_state> expected_end_state(trace_reader& trace, model_content content) {
  end_state_model m(trace, content);
  auto events = trace.events();
  event e;
  while (events.next(e)) m.apply(e);
  FSRR_TRY(events.status());
  return m.take();
}

}  // namespace fsrr
