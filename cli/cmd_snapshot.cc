#include "commands.h"

#include <stdexcept>

namespace fsrr::cli {

command add_snapshot(CLI::App& app) {
  auto* sub = app.add_subcommand("snapshot", "not built yet");
  return {sub, [] () -> int { throw std::runtime_error("snapshot is not built yet"); }};
}

}  // namespace fsrr::cli
