#include "commands.h"

#include <stdexcept>

namespace fsrr::cli {

command add_info(CLI::App& app) {
  auto* sub = app.add_subcommand("info", "not built yet");
  return {sub, [] () -> int { throw std::runtime_error("info is not built yet"); }};
}

}  // namespace fsrr::cli
