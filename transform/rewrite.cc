#include "rewrite.h"

#include "path_split.h"

#include <fmt/format.h>

namespace fsrr::transform {
namespace {

// A trace made from another keeps its time unit: rounding a trace of ns to 16 ns would
// change its times.
writer_options options(const trace_reader& in, bool force) {
  writer_options o;
  o.overwrite = force;
  o.time_unit_ns = in.header().time_unit_ns;
  return o;
}

}  // namespace

bool kept_path(std::string_view path, const std::vector<std::string>& prefixes) {
  for (std::string_view p : prefixes) {
    while (p.size() > 1 && p.back() == '/') p.remove_suffix(1);
    if (p.empty() || p == "/") return true;
    const std::string_view shorter = path.size() < p.size() ? path : p;
    const std::string_view longer = path.size() < p.size() ? p : path;
    // one is the other, or a whole-component prefix of it
    if (longer.substr(0, shorter.size()) == shorter &&
        (longer.size() == shorter.size() || longer[shorter.size()] == '/' || shorter == "/"))
      return true;
  }
  return false;
}

result<trace_rewriter> trace_rewriter::create(trace_reader& in, const std::string& out,
                                              const header_info& header, bool force,
                                              rewrite_hooks hooks) {
  auto w = trace_writer::create(out, header, options(in, force));
  if (!w) return tl::unexpected(w.error());
  auto owned = std::make_unique<trace_writer>(std::move(*w));
  trace_writer& ref = *owned;
  return trace_rewriter(in, std::move(owned), ref, std::move(hooks), {});
}

trace_rewriter trace_rewriter::into(trace_reader& in, trace_writer& out,
                                    rewrite_placement placement) {
  return trace_rewriter(in, nullptr, out, {}, std::move(placement));
}

trace_rewriter::trace_rewriter(trace_reader& in, std::unique_ptr<trace_writer> owned,
                               trace_writer& w, rewrite_hooks hooks, rewrite_placement placement)
    : in_(in),
      owned_(std::move(owned)),
      w_(&w),
      hooks_(std::move(hooks)),
      placement_(std::move(placement)) {
  paths_.assign(in.path_count() + 1, no_id);
  files_.assign(in.file_count() + 1, no_id);
  threads_.assign(in.thread_count() + 1, no_id);
  paths_[root_path] = root_path;
  const bool add = owned_ != nullptr;  // into(): the caller added them
  for (size_t k = 0; k < in.roots().size(); ++k) {
    const trace_root& r = in.roots()[k];
    uint32_t number;
    if (add) {
      trace_root o = r;
      o.where = r.where ? string(r.where, string_role::root_where) : no_id;
      number = w_->add_root(o);
      placement_.roots.push_back(number);
    } else {
      number = k < placement_.roots.size() ? placement_.roots[k] : 1;
    }
    if (r.top < paths_.size()) paths_[r.top] = w_->root_top(number);
  }
}

std::string trace_rewriter::name_of(path_id in, path_id parent, std::string_view name) {
  return hooks_.name ? hooks_.name(in, parent, name) : std::string(name);
}

path_id trace_rewriter::path(path_id in) {
  if (in == no_id) return no_id;
  if (in >= paths_.size()) paths_.resize(in + 1, no_id);
  if (paths_[in]) return paths_[in];
  // up to the nearest ancestor already mapped, then down again: no recursion, whatever depth
  std::vector<path_id> chain;
  path_id q = in;
  while (q != no_id && !(q < paths_.size() && paths_[q])) {
    chain.push_back(q);
    q = in_.path(q).parent;
  }
  if (q == no_id) return no_id;  // the reader checked that every path hangs below a root
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
    const path_entry& e = in_.path(*it);
    path_id parent = paths_[e.parent];
    if (placement_.split && placement_.split->local(*it) && !placement_.split->local(e.parent))
      parent = host_copy(e.parent);
    const std::string name = name_of(*it, parent, e.name);
    paths_[*it] = w_->intern_child(parent, name);
    if (paths_[*it] == no_id) {
      if (status_) status_ = failure("path {}: a name no path may hold: '{}'", *it, name);
      return no_id;
    }
  }
  return paths_[in];
}

path_id trace_rewriter::host_copy(path_id in) {
  std::vector<path_id> chain;  // up to "/" or a copy made already, then down
  path_id q = in;
  while (q != no_id && q != root_path && !host_paths_.count(q)) {
    chain.push_back(q);
    q = in_.path(q).parent;
  }
  if (q == no_id) return no_id;
  path_id at = q == root_path ? w_->root_top(placement_.host_root) : host_paths_[q];
  for (auto it = chain.rbegin(); it != chain.rend() && at != no_id; ++it) {
    at = w_->intern_child(at, std::string(in_.path(*it).name));
    host_paths_[*it] = at;
  }
  return at;
}

string_id trace_rewriter::string(string_id in, string_role role, path_id link) {
  if (in == no_id) return no_id;
  const bool memo = role != string_role::link_target;  // a link's target depends on the link
  if (memo)
    if (auto it = strings_.find({in, role}); it != strings_.end()) return it->second;
  const std::string& text = in_.string(in);
  const string_id out =
      w_->intern_string(hooks_.text ? hooks_.text(role, text, link) : std::string(text));
  if (memo) strings_[{in, role}] = out;
  return out;
}

file_id trace_rewriter::file(file_id in) {
  if (in == no_id) return no_id;
  if (in >= files_.size()) files_.resize(in + 1, no_id);
  if (!files_[in]) {
    file_info f = in_.file(in);
    f.host = static_cast<uint16_t>(f.host + placement_.host_base);
    files_[in] = w_->intern_file(f);
  }
  return files_[in];
}

void trace_rewriter::alias_file(file_id in, file_id out) {
  if (in == no_id) return;
  if (in >= files_.size()) files_.resize(in + 1, no_id);
  files_[in] = out;
}

thread_id trace_rewriter::thread(thread_id in, uint32_t fd_table) {
  if (in == no_id) return no_id;
  if (in >= threads_.size()) threads_.resize(in + 1, no_id);
  if (!threads_[in]) {
    thread_info t = in_.thread(in);
    t.comm = string(t.comm, string_role::comm);
    if (fd_table) t.fd_table = fd_table;
    if (t.fd_table) t.fd_table += placement_.fd_table_base;
    t.host = static_cast<uint16_t>(t.host + placement_.host_base);
    if (t.root && t.root <= placement_.roots.size()) t.root = placement_.roots[t.root - 1];
    threads_[in] = w_->add_thread(t);
  }
  return threads_[in];
}

void trace_rewriter::append(event e) {
  const uint32_t f = info(e.kind).fields;
  const op_class cls = info(e.kind).cls;
  e.thread = thread(e.thread);
  if (f & F_FILE) e.file = file(e.file);
  if (f & F_FILE2) e.file2 = file(e.file2);
  const path_id link = e.path;
  if (f & F_PATH) e.path = path(e.path);
  if (f & F_PATH2) e.path2 = path(e.path2);
  if ((f & F_AUX) && e.aux && e.aux <= in_.string_count()) {
    if (e.kind == op::symlink || e.kind == op::symlinkat)
      e.aux = string(static_cast<string_id>(e.aux), string_role::link_target, link);
    else if (cls == op_class::xattr)
      e.aux = string(static_cast<string_id>(e.aux), string_role::xattr_name);
  }
  // clone and exec carry the fd table the thread goes on with
  if (cls == op_class::process && (f & F_AUX) && e.aux) e.aux += placement_.fd_table_base;
  w_->append(e);
}

void trace_rewriter::add_tree_entry(tree_entry e) {
  const path_id link = e.path;
  e.path = path(e.path);
  put(std::move(e), link);
}

void trace_rewriter::add_tree_entry_at(tree_entry e, path_id at) {
  e.path = at;
  put(std::move(e), no_id);
}

void trace_rewriter::put(tree_entry e, path_id link) {
  if (e.target) e.target = string(e.target, string_role::link_target, link);
  e.file = file(e.file);
  if (e.link_group) e.link_group += placement_.link_group_base;
  for (auto& x : e.xattrs) x.name = string(x.name, string_role::xattr_name);
  w_->add_tree_entry(e);
}

result<path_id> trace_rewriter::placed(std::string_view p) {
  if (p.empty() || p.front() != '/') return failure("'{}': not a path", p);
  path_id at = root_path;
  size_t pos = 1;
  if (in_.roots().size() > 1) {  // "/rootN/...": below root N's top
    const size_t slash = p.find('/', 1);
    const std::string_view top = p.substr(1, slash == std::string_view::npos ? slash : slash - 1);
    uint32_t n = 0;
    if (top.substr(0, 4) == "root")
      for (char c : top.substr(4)) n = n * 10 + static_cast<uint32_t>(c - '0');
    if (n == 0 || n > in_.roots().size()) return failure("'{}': no such root", p);
    at = w_->root_top(n);
    pos = slash == std::string_view::npos ? p.size() : slash + 1;
  }
  while (pos < p.size()) {
    size_t end = p.find('/', pos);
    if (end == std::string_view::npos) end = p.size();
    if (end > pos && (at = w_->intern_child(at, p.substr(pos, end - pos))) == no_id)
      return failure("'{}': a name no path may hold (a NUL in it)", p);
    pos = end + 1;
  }
  return at;
}

void trace_rewriter::copy_counters() {
  const trace_summary& s = in_.summary();
  if (s.lost_events) w_->add_lost(0, s.lost_events);
  for (const auto& [key, n] : s.nonfile) w_->add_nonfile(key.first, key.second, n);
  if (s.incomplete) w_->mark_incomplete(s.incomplete);
  if (s.pauses || s.paused_ns) w_->add_pauses(s.pauses, s.paused_ns);
  if (s.filtered) w_->add_filtered(s.filtered);
  for (const auto& [mono, real] : in_.clock_pairs()) w_->add_clock_pair(mono, real);
}

result<void> trace_rewriter::finish() {
  if (!owned_) return status_;
  result<void> done = status_ ? w_->finish() : status_;
  if (!done) w_->abandon();
  finished_ = true;
  return done;
}

trace_rewriter::~trace_rewriter() {
  if (owned_ && !finished_) owned_->abandon();
}

}  // namespace fsrr::transform
