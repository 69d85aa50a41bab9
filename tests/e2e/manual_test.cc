// The manual fsrr writes from its own command line (fsrr generate-docs): a man page per
// command naming every option its --help names, bash completion offering them, --version
// naming the commit, and `fsrr help COMMAND`.
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "e2e.h"
#include "temp_dir.h"

using namespace fsrr::test;

namespace {

// What `command` (run by sh) prints on stdout.
std::string capture(const std::string& command) {
  std::string out;
  FILE* p = ::popen(command.c_str(), "r");
  REQUIRE(p);
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  ::pclose(p);
  return out;
}

// The subcommands `fsrr --help` lists.
std::vector<std::string> commands(const std::string& help) {
  std::vector<std::string> out;
  std::istringstream in(help.substr(help.find("Subcommands:")));
  std::string line;
  std::getline(in, line);
  while (std::getline(in, line))
    if (line.size() > 2 && line[0] == ' ' && line[2] != ' ')
      out.push_back(line.substr(2, line.find(' ', 2) - 2));
  return out;
}

// The long options `fsrr CMD --help` lists ("  -o,--output TEXT  ..." -> "output").
std::vector<std::string> long_options(const std::string& help) {
  std::vector<std::string> out;
  std::istringstream in(help);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.starts_with("  -")) continue;
    const std::string names = line.substr(2, line.find(' ', 2) - 2);
    for (size_t at = names.find("--"); at != std::string::npos; at = names.find("--", at + 2))
      out.push_back(names.substr(at + 2, names.find(',', at) - at - 2));
  }
  return out;
}

// The long options in the first column of a guide's "## Options" table
// ("| `--data MODE`, `--seed N` | ..." -> "data", "seed"; "| `-o, --output OUT` |" -> "output").
std::vector<std::string> guide_options(const std::string& markdown) {
  std::vector<std::string> out;
  const size_t at = markdown.find("\n## Options\n");
  REQUIRE(at != std::string::npos);
  std::istringstream in(markdown.substr(at + 1));
  std::string line;
  std::getline(in, line);
  while (std::getline(in, line) && !line.starts_with("## ")) {
    if (!line.starts_with("| ")) continue;
    const std::string first = line.substr(2, line.find(" |", 2) - 2);
    for (size_t dash = first.find("--"); dash != std::string::npos; dash = first.find("--", dash + 2)) {
      if (dash == 0 || (first[dash - 1] != '`' && first[dash - 1] != ' ')) continue;
      const size_t end = first.find_first_of(" `=,", dash + 2);
      out.push_back(first.substr(dash + 2, end - dash - 2));
    }
  }
  return out;
}

// What bash completion offers for the words (as bash splits them, : and = apart).
std::string completion(const std::string& script, const std::string& words, int cword) {
  return capture(fmt::format("bash -c 'source {}; COMP_WORDS=({}); COMP_CWORD={}; _fsrr; "
                             "echo \"${{COMPREPLY[*]}}\"'",
                             script, words, cword));
}

}  // namespace

TEST_CASE("every option of every command is in its man page and its completion") {
  temp_dir out("/dev/shm");
  REQUIRE(::mkdir((out / "man").c_str(), 0755) == 0);
  REQUIRE(run(fmt::format("{} generate-docs --man {} --bash {} --guides {}/docs/commands", FSRR_BIN,
                          out / "man", out / "fsrr.bash", SOURCE_DIR)) == 0);
  const auto names = commands(capture(fmt::format("{} --help", FSRR_BIN)));
  REQUIRE(names.size() == 16);  // record ... merge, crashtest, age, and help
  const std::string bash = slurp(out / "fsrr.bash");
  const std::string root = slurp(out / "man/fsrr.1");
  size_t options = 0;
  for (const std::string& name : names) {
    if (name == "help") continue;
    INFO(name);
    const std::string page = slurp(out / fmt::format("man/fsrr-{}.1", name));
    CHECK(page.starts_with(".TH FSRR\\-"));
    // valid man(7) roff: groff has no warning about it
    CHECK(capture(fmt::format("groff -man -ww -z {} 2>&1", out / fmt::format("man/fsrr-{}.1", name))) ==
          "");
    CHECK(root.find(fmt::format("\\fBfsrr {}\\fR", name)) != std::string::npos);
    // at 100 columns (man's default width less 7) no line runs past the terminal's edge
    CHECK(capture(fmt::format("groff -man -Tascii -rLL=93n -P-c -P-b -P-u {} 2>/dev/null | awk 'length > 100'",
                              out / fmt::format("man/fsrr-{}.1", name))) == "");
    // the page carries the guide: its sections, its examples, no markdown left
    CHECK(page.find("\n.SS Example") != std::string::npos);
    CHECK(page.find("\n## ") == std::string::npos);
    CHECK(page.find("```") == std::string::npos);
    const std::string arm = bash.substr(bash.find("\n    " + name + ")\n"));
    const std::vector<std::string> cli = long_options(
        capture(fmt::format("{} {} --help", FSRR_BIN, name)));
    // the guide's table of options lists exactly the command's options
    const std::vector<std::string> guide = guide_options(
        slurp(fmt::format("{}/docs/commands/{}.md", SOURCE_DIR, name)));
    for (const std::string& opt : guide) {
      INFO("in the guide's table, not in the CLI: --" << opt);
      CHECK(std::find(cli.begin(), cli.end(), opt) != cli.end());
    }
    for (const std::string& opt : cli) {
      INFO("in the CLI, not in the guide's table: --" << opt);
      CHECK((opt == "help" || std::find(guide.begin(), guide.end(), opt) != guide.end()));
    }
    for (const std::string& opt : cli) {
      INFO(opt);
      std::string roffed;
      for (char c : opt) roffed += c == '-' ? std::string("\\-") : std::string(1, c);
      CHECK(page.find("\\fB\\-\\-" + roffed + "\\fR") != std::string::npos);
      if (opt != "help") CHECK(arm.substr(0, arm.find("fi ;;\n")).find(" --" + opt) !=
                               std::string::npos);
      ++options;
    }
  }
  CHECK(options > 90);  // 96 when this was written
  // what completion offers, as bash runs it
  const std::string script = out / "fsrr.bash";
  CHECK(completion(script, "fsrr replay --tim", 2) == "--timing\n");
  CHECK(completion(script, "fsrr replay --timing \"\"", 3) == "faithful think afap\n");
  CHECK(completion(script, "fsrr compare t --fs xf", 4) == "xfs\n");
  CHECK(completion(script, "fsrr ver", 1) == "verify\n");
  CHECK(completion(script, "fsrr record -o t -- mkfs.btrf", 5) == "mkfs.btrfs\n");
  CHECK(completion(script, "fsrr replay --timing = th", 4) == "think\n");  // --timing=th
  CHECK(completion(script, "fsrr replay t d --data compress :", 6) == "2 4\n");
  CHECK(completion(script, "fsrr replay t d --data compress : 4", 7) == "4\n");
  CHECK(completion(script, "fsrr compare t --fs btrfs : compress =", 7) == "lzo zstd\n");
  CHECK(completion(script, "fsrr compare t --fs = btrfs : compress = z", 9) == "zstd\n");
  // a trace whose name has a space comes back whole (one reply), beside a directory
  write_file(out / "my copy.trace", 1);
  CHECK(capture(fmt::format("cd {} && bash -c 'source {}; COMP_WORDS=(fsrr info my); "
                            "COMP_CWORD=2; _fsrr; printf \"[%s]\" \"${{COMPREPLY[@]}}\"'",
                            out.path(), script)) == "[my copy.trace]");
}

TEST_CASE("fsrr --version names the commit, and fsrr help COMMAND prints that command's options") {
  const std::string commit = capture(fmt::format("git -C {} rev-parse --short=12 HEAD", SOURCE_DIR));
  REQUIRE(commit.size() == 13);  // 12 hex digits and a newline: the tests run in a checkout
  const std::string version = capture(fmt::format("{} --version", FSRR_BIN));
  CHECK(version.starts_with("fsrr 0.1.0 (git " + commit.substr(0, 12)));
  const std::string help = capture(fmt::format("{} help verify", FSRR_BIN));
  CHECK(help.find("\nUsage: fsrr verify [OPTIONS] FILE TARGET\n") != std::string::npos);
  CHECK(help == capture(fmt::format("{} verify --help", FSRR_BIN)));
  CHECK(run(fmt::format("{} help nope >/dev/null 2>&1", FSRR_BIN)) == 2);
}
