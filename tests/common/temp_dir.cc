#include "temp_dir.h"

#include <ftw.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <vector>

namespace fsrr::test {

temp_dir::temp_dir(const std::string& base) {
  std::vector<char> tmpl(base.begin(), base.end());
  const std::string suffix = "/fsrr-test.XXXXXX";
  tmpl.insert(tmpl.end(), suffix.begin(), suffix.end());
  tmpl.push_back('\0');
  if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed under " + base);
  path_ = tmpl.data();
}

temp_dir::~temp_dir() { remove_tree(path_); }

std::vector<uint8_t> file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

void remove_tree(const std::string& path) {
  ::nftw(
      path.c_str(),
      [](const char* p, const struct stat*, int, struct FTW*) {
        ::remove(p);  // what cannot be removed is left; the walk goes on
        return 0;
      },
      64, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
}

}  // namespace fsrr::test
