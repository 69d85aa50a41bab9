#include <fmt/format.h>

#include "commands.h"
#include "slice.h"
#include "trace_error.h"
#include "trace_reader.h"

namespace fsrr::cli {

command add_slice(CLI::App& app) {
  struct opts {
    std::string file, out;
    std::vector<std::string> pids, tids;
    transform::slice_options s;
    double from = 0, to = 0;
  };
  auto o = std::make_shared<opts>();
  auto* sub = app.add_subcommand(
      "slice",
      "Write the part of FILE that the options choose as a trace that replays on its own: its "
      "initial tree is the state at its start, files open then are opened at the start, and "
      "what the chosen events need of the others (a directory another process made) comes "
      "along");
  sub->add_option("FILE", o->file, "Trace file")->required();
  sub->add_option("-o,--output", o->out, "Trace file to create")->required();
  auto* from = sub->add_option("--from", o->from, "Start, in seconds of trace time (as dump shows)");
  auto* to = sub->add_option("--to", o->to, "End (not included), in seconds of trace time");
  sub->add_option("--pid", o->pids,
                  "Only these processes (as the trace shows them); HOST:PID in a merged trace")
      ->allow_extra_args(false);
  sub->add_option("--tid", o->tids, "Only these threads; HOST:TID in a merged trace")
      ->allow_extra_args(false);
  sub->add_option("--path", o->s.paths, "Only events on paths beneath this prefix")
      ->allow_extra_args(false);
  sub->add_flag("--force", o->s.force, "Overwrite the output file if it exists");
  return {sub, [o, from, to] {
            if (*from) o->s.from = o->from;
            for (const auto& p : o->pids)
              o->s.pids.push_back(or_throw(transform::parse_thread_pick(p, "--pid")));
            for (const auto& t : o->tids)
              o->s.tids.push_back(or_throw(transform::parse_thread_pick(t, "--tid")));
            if (*to) o->s.to = o->to;
            for (const auto& p : o->s.paths)
              if (p.empty() || p.front() != '/')
                throw trace_error(fmt::format("--path '{}': not an absolute path", p));
            refuse_same_file(o->file, o->out);
            trace_reader in = or_throw(trace_reader::open(o->file));
            const auto r = or_throw(transform::slice(in, o->out, o->s));
            fmt::print("slice: {} events ({} chosen, the rest what they need; {} fds open at the "
                       "start), an initial tree of {} entries → {}\n",
                       r.events, r.chosen, r.bound, r.tree, o->out);
            return 0;
          }};
}

}  // namespace fsrr::cli
