// Running the programs the lab drives (mkfs, mount, umount; minimize's predicate): argv, no
// shell.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace fsrr::lab {

struct command_result {
  int status = -1;     // exit status; 128 + signal; -1 if it could not start
  std::string output;  // stdout and stderr, together (the first MiB), if kept
};

struct command_options {
  std::vector<std::pair<std::string, std::string>> env;  // set in the program's environment
  bool keep_output = true;  // false: its output goes to /dev/null
};

command_result run_command(const std::vector<std::string>& argv, const command_options& o = {});

// The last non-empty line of a tool's output: where a failed mkfs, mount or cp says why.
std::string last_line(std::string output);

// The first line of a tool's version (`mkfs.xfs -V`), "" if it has none.
std::string tool_version(const std::string& program);

}  // namespace fsrr::lab
