// What the end-to-end tests share: the environment check, and reading what programs wrote.
#pragma once

#include <cstddef>
#include <string>

#include "loop_fs.h"  // run(command)

namespace fsrr::test {

// Recording needs root and kernel BTF. Without them a test returns early with a warning,
// except under CI=true, where that is a failure.
bool can_record();

std::string slurp(const std::string& path);
void write_file(const std::string& path, size_t bytes, char fill = 'e');

}  // namespace fsrr::test
