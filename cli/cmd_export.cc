#include <fmt/format.h>

#include "commands.h"
#include "fio_export.h"
#include "trace_error.h"
#include "trace_reader.h"

namespace fsrr::cli {

command add_export(CLI::App& app) {
  struct opts {
    std::string file, fio;
  };
  auto o = std::make_shared<opts>();
  auto* sub = app.add_subcommand(
      "export",
      "Write FILE's reads, writes and syncs for another tool: --fio DIR makes DIR/fsrr.fio and "
      "one fio iolog (version 3) per recorded thread, the files beneath DIR/data");
  sub->add_option("FILE", o->file, "Trace file")->required();
  sub->add_option("--fio", o->fio, "Directory to create (or an empty one)")->required();
  return {sub, [o] {
            trace_reader in = or_throw(trace_reader::open(o->file));
            const auto r = or_throw(transform::export_fio(in, o->fio));
            fmt::print("export: {} jobs over {} files: {} reads ({} bytes), {} writes ({} bytes), "
                       "{} syncs; layout writes {} bytes first → {}/fsrr.fio (fio {}/fsrr.fio)\n",
                       r.jobs, r.files, r.reads, r.bytes_read, r.writes, r.bytes_written, r.syncs,
                       r.layout_bytes, o->fio, o->fio);
            return 0;
          }};
}

}  // namespace fsrr::cli
