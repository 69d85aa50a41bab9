#include "commands.h"

#include <stdexcept>

namespace fsrr::cli {

command add_verify(CLI::App& app) {
  auto* sub = app.add_subcommand("verify", "not built yet");
  return {sub, [] () -> int { throw std::runtime_error("verify is not built yet"); }};
}

}  // namespace fsrr::cli
