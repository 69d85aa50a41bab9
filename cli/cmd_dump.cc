#include <cstdio>

#include <fmt/format.h>

#include "commands.h"
#include "describe.h"
#include "trace_error.h"
#include "trace_reader.h"

namespace fsrr::cli {

command add_dump(CLI::App& app) {
  struct opts {
    std::string file = "fsrr.trace";
    bool json = false;
    bool tree = false;
  };
  auto o = std::make_shared<opts>();
  auto* sub = app.add_subcommand("dump", "Print every event, one per line, in time order");
  sub->add_option("FILE", o->file, "Trace file")->capture_default_str();
  sub->add_flag("--json", o->json, "JSON Lines: one object per event");
  sub->add_flag("--tree", o->tree, "Print the initial tree entries before the events");
  return {sub, [o] {
            trace_reader r = or_throw(trace_reader::open(o->file));
            std::string line;
            if (o->tree)
              for (const auto& t : r.tree()) {
                line = json_text(to_json(r, t));  // tree entries have no text form
                line += '\n';
                std::fwrite(line.data(), 1, line.size(), stdout);
              }
            auto events = r.events();
            event e;
            while (events.next(e)) {
              line = o->json ? json_text(to_json(r, e)) : describe(r, e);
              line += '\n';
              std::fwrite(line.data(), 1, line.size(), stdout);
            }
            or_throw(events.status());
            if (!r.damage().empty()) fmt::print(stderr, "fsrr: {}: {}\n", o->file, r.damage());
            return 0;
          }};
}

}  // namespace fsrr::cli
