// The digests anonymize writes names as.
#include <set>
#include <vector>
#include <string>

#include <catch2/catch.hpp>

#include "anonymize.h"
#include "rewrite.h"

using namespace fsrr::transform;

namespace {
anonymize_key key_of(uint8_t b) {
  anonymize_key k;
  k.fill(b);
  return k;
}
}  // namespace

TEST_CASE("a digest has the name's length, in a filename-safe alphabet, never a dot") {
  const auto k = key_of(1);
  for (const std::string& name : std::vector<std::string>{"a", "ab", "report.pdf", std::string(255, 'x')}) {
    const std::string d = name_digest(k, name, name.size());
    CHECK(d.size() == name.size());
    CHECK(d.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_") ==
          std::string::npos);
  }
  std::set<std::string> ones;  // every one-character digest is a name: no "." among them
  for (int c = 0; c < 256; ++c) ones.insert(name_digest(k, std::string(1, static_cast<char>(c)), 1));
  CHECK(ones.count(".") == 0);
  CHECK(ones.size() > 40);  // and they spread over the alphabet
}

TEST_CASE("one key, one name: one digest, and a longer digest extends the shorter") {
  const auto k = key_of(7);
  CHECK(name_digest(k, "salaries.xlsx", 13) == name_digest(k, "salaries.xlsx", 13));
  CHECK(name_digest(k, "salaries.xlsx", 14).substr(0, 13) == name_digest(k, "salaries.xlsx", 13));
  CHECK(name_digest(k, "salaries.xlsx", 13) != name_digest(k, "salaries.xlsy", 13));
  CHECK(name_digest(key_of(8), "salaries.xlsx", 13) != name_digest(k, "salaries.xlsx", 13));
}

TEST_CASE("the key id is a digest of the key, not the key") {
  const auto a = key_of(3), b = key_of(4);
  CHECK(key_id(a).size() == 16);
  CHECK(key_id(a) == key_id(a));
  CHECK(key_id(a) != key_id(b));
  CHECK(key_id(a).find("0303") == std::string::npos);
}

TEST_CASE("kept paths: the prefixes, what lies beneath them, and the way to them") {
  const std::vector<std::string> keep = {"/usr", "/opt/app/"};
  CHECK(kept_path("/usr", keep));
  CHECK(kept_path("/usr/lib/x.so", keep));
  CHECK(kept_path("/opt", keep));  // on the way to /opt/app
  CHECK(kept_path("/opt/app/bin/tool", keep));
  CHECK(kept_path("/", keep));
  CHECK_FALSE(kept_path("/usrdata", keep));
  CHECK_FALSE(kept_path("/opt/application", keep));
  CHECK_FALSE(kept_path("/home/alice", keep));
}
