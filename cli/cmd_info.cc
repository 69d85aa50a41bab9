#include <fmt/format.h>

#include "commands.h"
#include "describe.h"
#include "report.h"
#include "trace_error.h"
#include "trace_reader.h"

namespace fsrr::cli {

command add_info(CLI::App& app) {
  struct opts {
    std::string file = "fsrr.trace";
    bool json = false;
  };
  auto o = std::make_shared<opts>();
  auto* sub = app.add_subcommand("info", "Summarize a trace: header, state (complete, torn, lost "
                                         "events), duration, op counts, bytes, files, tree");
  sub->add_option("FILE", o->file, "Trace file")->capture_default_str();
  sub->add_flag("--json", o->json, "One JSON object instead of text");
  return {sub, [o] {
            trace_reader r = or_throw(trace_reader::open(o->file));
            const flow_stats flow = or_throw(trace_flow(r));
            if (o->json) {
              auto j = info_json(r);
              j["data_flow"] = flow_json(flow);
              fmt::print("{}\n", json_text(j, 2));
            } else {
              fmt::print("{}data flow: {}\n", info_text(r), flow_text(flow, 11));
            }
            return 0;
          }};
}

}  // namespace fsrr::cli
