// Running the tools compare drives (mkfs, mount, umount): argv, no shell; output kept.
#pragma once

#include <string>
#include <vector>

namespace fsrr::lab {

struct command_result {
  int status = -1;     // exit status; 128 + signal; -1 if it could not start
  std::string output;  // stdout and stderr, together
};

command_result run_command(const std::vector<std::string>& argv);

// The first line of a tool's version (`mkfs.xfs -V`), "" if it has none.
std::string tool_version(const std::string& program);

}  // namespace fsrr::lab
