#include "commands.h"

#include <stdexcept>

namespace fsrr::cli {

command add_replay(CLI::App& app) {
  auto* sub = app.add_subcommand("replay", "not built yet");
  return {sub, [] () -> int { throw std::runtime_error("replay is not built yet"); }};
}

}  // namespace fsrr::cli
