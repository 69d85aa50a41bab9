// fsrr: parse the command line, run one subcommand, turn a fatal error into one line.
#include <malloc.h>
#include <signal.h>
#include <sys/stat.h>

#include <cstdio>
#include <exception>
#include <vector>

#include <fmt/format.h>

#include "commands.h"
#include "manual.h"
#include "trace_error.h"
#include "version.h"

namespace fsrr::cli {
namespace {
std::atomic<bool> interrupted{false};
}  // namespace

const std::atomic<bool>& stop_on_signals() {
  struct sigaction sa {};
  sa.sa_handler = [](int) { interrupted.store(true); };
  ::sigemptyset(&sa.sa_mask);
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);
  return interrupted;
}

void refuse_same_file(const std::string& in, const std::string& out) {
  struct stat a {}, b {};
  if (::stat(in.c_str(), &a) == 0 && ::stat(out.c_str(), &b) == 0 && a.st_dev == b.st_dev &&
      a.st_ino == b.st_ino)
    throw trace_error(fmt::format("{} is the input trace itself: refusing to write over it", out));
}

}  // namespace fsrr::cli

int main(int argc, char** argv) {
  // Blocks of 1 MiB and more (a trace block decompressed, a table grown) straight from mmap and
  // back to the system when freed. glibc's default raises that threshold to the largest block
  // freed so far, after which such buffers come from the heap and stay in RSS once freed:
  // 14 MiB of replay's 138 at 300k files, 11 of record's 153, 14 of verify's 206.
  ::mallopt(M_MMAP_THRESHOLD, 1 << 20);
  CLI::App app{"fsrr: record a program's file-system activity with eBPF and replay it on any "
               "file system",
               "fsrr"};  // usage lines say "fsrr replay", whatever path ran it
  app.require_subcommand(1);
  const std::string version = FSRR_VERSION " (git " FSRR_GIT_COMMIT ")";
  app.set_version_flag("--version", "fsrr " + version);
  const std::vector<fsrr::cli::command> commands = {
      fsrr::cli::add_record(app), fsrr::cli::add_snapshot(app), fsrr::cli::add_info(app),
      fsrr::cli::add_dump(app),   fsrr::cli::add_replay(app),   fsrr::cli::add_verify(app),
      fsrr::cli::add_compare(app), fsrr::cli::add_crashtest(app), fsrr::cli::add_age(app), fsrr::cli::add_anonymize(app), fsrr::cli::add_slice(app),
      fsrr::cli::add_minimize(app),  fsrr::cli::add_export(app),
      fsrr::cli::add_import(app), fsrr::cli::add_merge(app),
      fsrr::cli::add_help(app),   fsrr::cli::add_generate_docs(app, version),
  };
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;  // --help, --version; any other: a usage error
  }
  for (const auto& c : commands) {
    if (!c.app->parsed()) continue;
    try {
      return c.run();
    } catch (const fsrr::status_error& e) {
      std::fflush(stdout);
      if (*e.what()) fmt::print(stderr, "fsrr: {}\n", e.what());  // none: told elsewhere
      return e.status;
    } catch (const std::exception& e) {
      std::fflush(stdout);
      fmt::print(stderr, "fsrr: {}\n", e.what());
      return 1;
    }
  }
  return 2;
}
