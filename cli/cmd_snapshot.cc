#include <fmt/format.h>

#include "commands.h"
#include "host_header.h"
#include "trace_error.h"
#include "trace_writer.h"
#include "tree_snapshot.h"

namespace fsrr::cli {

command add_snapshot(CLI::App& app) {
  struct opts {
    std::vector<std::string> dirs;
    std::string out = "fsrr.trace";
    bool force = false;
  };
  auto o = std::make_shared<opts>();
  auto* sub = app.add_subcommand(
      "snapshot", "Write a tree-only trace of DIR...: names, types, sizes, sparse extents, modes, "
                  "owners, times, symlink targets, hard links, xattr names and sizes");
  sub->add_option("DIR", o->dirs, "Directories to snapshot (not followed across mounts)")
      ->required()
      ->check(CLI::ExistingDirectory);
  sub->add_option("-o,--output", o->out, "Trace file to create")->capture_default_str();
  sub->add_flag("--force", o->force, "Overwrite the output file if it exists");
  return {sub, [o] {
            std::vector<std::string> cmd = {"fsrr", "snapshot"};
            cmd.insert(cmd.end(), o->dirs.begin(), o->dirs.end());
            writer_options wo;
            wo.overwrite = o->force;
            trace_writer w =
                or_throw(trace_writer::create(o->out, host_header(trace_kind::snapshot, cmd), wo));
            snapshot_stats total;
            for (const auto& d : o->dirs) {
              const auto s = or_throw(snapshot_tree(w, d));
              total.entries += s.entries;
              total.errors += s.errors;
            }
            or_throw(w.finish());
            const auto& t = w.summary().tree;
            fmt::print("snapshot: {} files, {} dirs, {} symlinks, {} other, {} bytes of data → {} "
                       "({} bytes)\n",
                       t.files, t.dirs, t.symlinks, t.other, t.bytes, o->out, w.file_bytes());
            if (total.errors)
              fmt::print(stderr, "fsrr: snapshot: {} entries vanished or could not be read\n",
                         total.errors);
            return total.errors ? 1 : 0;
          }};
}

}  // namespace fsrr::cli
