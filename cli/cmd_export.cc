#include <optional>

#include <fmt/format.h>

#include "commands.h"
#include "describe.h"
#include "fio_export.h"
#include "shell_export.h"
#include "trace_error.h"
#include "trace_reader.h"

namespace fsrr::cli {

command add_export(CLI::App& app) {
  struct opts {
    std::string file, fio, shell;
    std::optional<uint64_t> crash_after;
  };
  auto o = std::make_shared<opts>();
  auto* sub = app.add_subcommand(
      "export",
      "Write FILE for another tool: --fio DIR makes DIR/fsrr.fio and one fio iolog (version 3) "
      "per recorded thread, the files beneath DIR/data; --shell SCRIPT a bash script that makes "
      "the initial tree beneath its TARGET argument and issues the ops with coreutils, one "
      "after another (a reproducer for a bug report)");
  sub->add_option("FILE", o->file, "Trace file")->required();
  auto* fio = sub->add_option("--fio", o->fio, "Directory to create (or an empty one)");
  auto* shell = sub->add_option("--shell", o->shell, "Script to create (run it: bash SCRIPT TARGET)");
  fio->excludes(shell);
  sub->add_option("--crash-after", o->crash_after,
                  "With --shell: the script stops right after op SEQ (crashtest's numbering) and "
                  "runs $CRASH there (default: xfs_io -x -c shutdown TARGET)")
      ->needs(shell);
  return {sub, [o] {
            if (o->fio.empty() && o->shell.empty())
              throw trace_error("export needs --fio DIR or --shell SCRIPT");
            trace_reader in = or_throw(trace_reader::open(o->file));
            if (!o->shell.empty()) {
              refuse_same_file(o->file, o->shell);
              const auto r = or_throw(transform::export_shell(
                  in, o->shell, [&in](const event& e) { return describe(in, e); },
                  o->crash_after));
              fmt::print("export: {} tree entries and {} ops as commands, {} left as comments "
                         "({} through a symlink or by a name a script cannot confine) → {} "
                         "(bash {} TARGET)\n",
                         r.tree_entries, r.ops, r.comments, r.unsafe, o->shell, o->shell);
              return 0;
            }
            const auto r = or_throw(transform::export_fio(in, o->fio));
            fmt::print("export: {} jobs over {} files: {} reads ({} bytes), {} writes ({} bytes), "
                       "{} syncs; layout writes {} bytes first → {}/fsrr.fio (fio {}/fsrr.fio)\n",
                       r.jobs, r.files, r.reads, r.bytes_read, r.writes, r.bytes_written, r.syncs,
                       r.layout_bytes, o->fio, o->fio);
            return 0;
          }};
}

}  // namespace fsrr::cli
