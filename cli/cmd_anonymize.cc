#include <sys/stat.h>

#include <chrono>

#include <fmt/format.h>

#include "anonymize.h"
#include "commands.h"
#include "trace_error.h"
#include "trace_reader.h"

namespace fsrr::cli {

command add_anonymize(CLI::App& app) {
  struct opts {
    std::string file, out, key_file;
    std::vector<std::string> keep;
    bool force = false;
  };
  auto o = std::make_shared<opts>();
  auto* sub = app.add_subcommand(
      "anonymize",
      "Write a copy of FILE whose names are keyed digests of the same length: path components "
      "(but below /usr, /lib*, /bin, /sbin, /etc, /proc, /sys and --keep), symlink targets, "
      "user.* and trusted.* xattr names, thread names, the command line and the host name");
  sub->add_option("FILE", o->file, "Trace file")->required();
  sub->add_option("-o,--output", o->out, "Trace file to create")->required();
  sub->add_option("--key-file", o->key_file,
                  "Key: this file's bytes are hashed into it (a passphrase file works); the "
                  "same key maps the same name the same way in every trace. Without it a "
                  "random key is used and forgotten");
  sub->add_option("--keep", o->keep, "Also keep paths beneath this prefix as they are")
      ->allow_extra_args(false);
  sub->add_flag("--force", o->force, "Overwrite the output file if it exists");
  return {sub, [o] {
            for (const auto& k : o->keep)
              if (k.empty() || k.front() != '/')
                throw trace_error(fmt::format("--keep '{}': not an absolute path", k));
            refuse_same_file(o->file, o->out);
            trace_reader in = or_throw(trace_reader::open(o->file));
            transform::anonymize_options ao;
            ao.key_file = o->key_file;
            ao.keep = o->keep;
            ao.force = o->force;
            const auto t0 = std::chrono::steady_clock::now();
            const auto r = or_throw(transform::anonymize(in, o->out, ao));
            const double secs =
                std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            struct stat st {};
            ::stat(o->out.c_str(), &st);
            fmt::print("anonymize: {} events, {} names replaced ({} grew to stay unique), key id "
                       "{}, {:.2f} s → {} ({} bytes; was {})\n",
                       r.events, r.names, r.grown, r.key_id, secs, o->out, st.st_size,
                       in.file_bytes());
            return 0;
          }};
}

}  // namespace fsrr::cli
