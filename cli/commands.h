// Each subcommand registers its options on the app and returns how to run it. The bodies
// only parse and call into the libraries; they live one per file (cmd_<name>.cc).
#pragma once

#include <atomic>
#include <functional>
#include <string>

#include <CLI/CLI.hpp>

namespace fsrr::cli {

struct command {
  CLI::App* app;
  std::function<int()> run;  // exit status
};

command add_record(CLI::App& app);
command add_snapshot(CLI::App& app);
command add_info(CLI::App& app);
command add_dump(CLI::App& app);
command add_replay(CLI::App& app);
command add_verify(CLI::App& app);
command add_compare(CLI::App& app);
command add_crashtest(CLI::App& app);
command add_age(CLI::App& app);
command add_anonymize(CLI::App& app);
command add_slice(CLI::App& app);
command add_minimize(CLI::App& app);
command add_export(CLI::App& app);
command add_import(CLI::App& app);
command add_merge(CLI::App& app);

// SIGINT and SIGTERM set the returned flag (and no longer end the process): a command that
// makes things cleans them up and stops at its next step.
const std::atomic<bool>& stop_on_signals();

// Throws trace_error when `out` is `in` itself (or a link to it): a transform must never write
// over the trace it reads.
void refuse_same_file(const std::string& in, const std::string& out);

}  // namespace fsrr::cli
