// The manual, from the same app tree the command line parses with: man pages (fsrr(1), one
// fsrr-COMMAND(1) per command) and bash completion. The build writes them (`fsrr
// generate-docs`, hidden), so an option cannot exist in the CLI and be missing from its page.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "commands.h"

namespace fsrr::cli {

// fsrr(1) when `sub` is null, fsrr-NAME(1) for a subcommand; `guide` is that command's
// markdown guide (docs/commands/NAME.md), whose text the page carries (empty: none).
std::string man_page(const CLI::App& root, const CLI::App* sub, const std::string& version,
                     const std::string& guide = {});

// A bash completion script for `fsrr`: commands, each command's options, the values of options
// that take one of a few (--timing, --data, --fs kinds), trace files for FILE arguments.
std::string bash_completion(const CLI::App& root);

// `fsrr help [COMMAND]`: the command's --help (the app's without one).
command add_help(CLI::App& app);

// `fsrr generate-docs --man DIR --bash FILE --guides DIR` (hidden: the build's, not a user's).
command add_generate_docs(CLI::App& app, const std::string& version);

}  // namespace fsrr::cli
