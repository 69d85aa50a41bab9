#include <fmt/format.h>

#include "commands.h"
#include "strace_import.h"
#include "trace_error.h"

namespace fsrr::cli {

command add_import(CLI::App& app) {
  struct opts {
    std::string format, log, out;
    bool force = false;
  };
  auto o = std::make_shared<opts>();
  auto* sub = app.add_subcommand(
      "import",
      "Make a trace from another tool's log: `import strace LOG` reads `strace -f -ttt -T -y` "
      "(or -yy) output; the initial tree is what the log shows the program found");
  sub->add_option("FORMAT", o->format, "strace")->required()->check(CLI::IsMember({"strace"}));
  sub->add_option("LOG", o->log, "The log")->required()->check(CLI::ExistingFile);
  sub->add_option("-o,--output", o->out, "Trace file to create")->required();
  sub->add_flag("--force", o->force, "Overwrite the output file if it exists");
  return {sub, [o] {
            refuse_same_file(o->log, o->out);
            const auto r = or_throw(transform::import_strace(o->log, o->out, o->force));
            fmt::print("import: {} lines: {} events, {} non-file ops, {} threads, an initial tree "
                       "of {} entries; {} calls fsrr does not record, {} lines not understood → {}\n",
                       r.lines, r.events, r.nonfile, r.threads, r.tree, r.not_ops, r.unparsed,
                       o->out);
            if (!r.annotated)
              fmt::print(stderr, "fsrr: import: warning: no -y annotations in the log: relative names "
                                 "and fds could not be placed (strace -f -ttt -T -y)\n");
            return 0;
          }};
}

}  // namespace fsrr::cli
