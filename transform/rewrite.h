// transform/: traces in, traces out, nothing replayed (anonymize, slice, minimize).
//
// A trace copied into a new one. Table entries (paths, strings, files, threads, roots) are
// interned in the output as what is written names them, so an output holds only what its
// events and tree use; hooks may rename path components and strings on the way.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "trace_reader.h"
#include "trace_writer.h"

namespace fsrr::transform {

namespace merge_detail {
class path_split;
}

// What a string of the trace is: the hooks rename each kind its own way.
enum class string_role : uint8_t { comm, link_target, xattr_name, root_where, other };

struct rewrite_hooks {
  // The output name of input path `in`'s last component `name`; `parent` is the output path of
  // its parent. Unset: as it is.
  std::function<std::string(path_id in, path_id parent, std::string_view name)> name;
  // The output text of a string in `role`; for a link target, `link` is the link's input path.
  // Unset: as it is.
  std::function<std::string(string_role role, std::string_view text, path_id link)> text;
};

// Where one input of several goes in a shared output (merge): its hosts, fd tables and hard
// link groups after those of the inputs before it, its roots as `roots` says.
struct rewrite_placement {
  uint16_t host_base = 0;
  uint32_t fd_table_base = 0;
  uint32_t link_group_base = 0;
  std::vector<uint32_t> roots;  // input root k + 1 -> its output root (already added)
  // merge --shared: the paths `split` calls its host's own go beneath output root `host_root`
  // (already added) at the same path; the rest stay where `roots` put them.
  merge_detail::path_split* split = nullptr;
  uint32_t host_root = 0;
};

class trace_rewriter {
 public:
  // Creates `out` (refusing an existing file unless `force`) with `header` and the input's
  // roots.
  static result<trace_rewriter> create(trace_reader& in, const std::string& out,
                                       const header_info& header, bool force,
                                       rewrite_hooks hooks = {});
  // An input of several written into `out`, which the caller owns and finishes; its roots are
  // in the output already (placement.roots).
  static trace_rewriter into(trace_reader& in, trace_writer& out, rewrite_placement placement);

  // no_id for no_id, and for a name a hook made that no path may hold (then finish() fails).
  path_id path(path_id in);
  string_id string(string_id in, string_role role, path_id link = no_id);
  file_id file(file_id in);
  // Input file `in` is output file `out` (one file two inputs reach: merge).
  void alias_file(file_id in, file_id out);
  // Threads are added as they are first used; `fd_table` overrides the recorded one (a slice
  // starts where exec and clone left each thread).
  thread_id thread(thread_id in, uint32_t fd_table = 0);

  // A placed path (trace_reader::placed_path: "/rootN/..." with several roots) in the output;
  // refuses one that is not absolute, names no root, or holds a NUL.
  result<path_id> placed(std::string_view placed_path);

  // merge --shared: where input path `in`, on the way to a shared prefix, lies beneath the
  // host's root (its own paths hang from it there).
  path_id host_path(path_id in) { return host_copy(in); }

  // Written with every id it holds mapped.
  void append(event e);
  void add_tree_entry(tree_entry e);
  // The same, at output path `at` (e.path is not looked at; the rest are input ids).
  void add_tree_entry_at(tree_entry e, path_id at);
  // Lost events, non-file op counts, incompleteness, pauses, filtered events, clock pairs.
  void copy_counters();
  // The writer's finish(), or the first failure before it. An output that did not finish,
  // or was never finished (its maker gave up on an error), is removed: a transform leaves a
  // whole trace or none.
  [[nodiscard]] result<void> finish();
  // A name a hook or a placed path could not write: finish() fails with it.
  result<void> status() const { return status_; }
  ~trace_rewriter();
  trace_rewriter(trace_rewriter&&) noexcept = default;
  trace_writer& writer() { return *w_; }

 private:
  trace_rewriter(trace_reader& in, std::unique_ptr<trace_writer> owned, trace_writer& w,
                 rewrite_hooks hooks, rewrite_placement placement);
  std::string name_of(path_id in, path_id parent, std::string_view name);
  void put(tree_entry e, path_id link);  // e.path already an output id

  trace_reader& in_;
  std::unique_ptr<trace_writer> owned_;  // null when the caller owns the writer (into)
  trace_writer* w_;
  rewrite_hooks hooks_;
  rewrite_placement placement_;
  // The output path, beneath placement_.host_root, of an input path on the way to a shared
  // prefix ("/", "/mnt"): where its host's own children go.
  path_id host_copy(path_id in);
  std::vector<path_id> paths_;    // by input id; 0: not yet
  std::unordered_map<path_id, path_id> host_paths_;  // host_copy's
  std::vector<file_id> files_;    // by input id
  std::vector<thread_id> threads_;  // by input id
  std::map<std::pair<string_id, string_role>, string_id> strings_;
  result<void> status_;  // the first name that could not be written
  bool finished_ = false;
};

// Whether `path` (absolute) is one of `prefixes`, lies beneath one, or lies on the way to one
// ("/opt" on the way to "/opt/app").
bool kept_path(std::string_view path, const std::vector<std::string>& prefixes);

}  // namespace fsrr::transform
