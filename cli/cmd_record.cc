#include "commands.h"

#include <stdexcept>

namespace fsrr::cli {

command add_record(CLI::App& app) {
  auto* sub = app.add_subcommand("record", "not built yet");
  return {sub, [] () -> int { throw std::runtime_error("record is not built yet"); }};
}

}  // namespace fsrr::cli
