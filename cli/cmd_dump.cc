#include "commands.h"

#include <stdexcept>

namespace fsrr::cli {

command add_dump(CLI::App& app) {
  auto* sub = app.add_subcommand("dump", "not built yet");
  return {sub, [] () -> int { throw std::runtime_error("dump is not built yet"); }};
}

}  // namespace fsrr::cli
