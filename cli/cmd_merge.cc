#include <sys/stat.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "commands.h"
#include "merge.h"
#include "trace_error.h"
#include "trace_reader.h"

namespace fsrr::cli {

command add_merge(CLI::App& app) {
  struct opts {
    std::vector<std::string> files;
    std::string out;
    transform::merge_options m;
  };
  auto o = std::make_shared<opts>();
  auto* sub = app.add_subcommand(
      "merge",
      "Merge traces recorded at the same time on several hosts (or by several fsrr record runs "
      "on one) into one trace: each keeps its host, times go on one clock (their realtime), "
      "paths stay as recorded and the initial trees are united, a path two traces share being "
      "one file");
  sub->add_option("FILE", o->files, "Trace files (two or more)")->required();
  sub->add_option("-o,--output", o->out, "Trace file to create")->required();
  sub->add_option("--shared", o->m.shared,
                  "PREFIX: the shared file system's mount point (repeatable). Paths beneath it, "
                  "beneath /usr, /etc and the other system directories, and the directories on "
                  "the way are one for all hosts; every other path (/tmp, /home, /var/log...) "
                  "is its host's own, replayed beneath TARGET/hosts/NAME. Without it every path "
                  "is one for all hosts")
      ->type_name("PREFIX")
      ->allow_extra_args(false);
  sub->add_flag("--force", o->m.force, "Overwrite the output file if it exists");
  return {sub, [o] {
            if (o->files.size() < 2)
              throw status_error(2, "merge needs two traces or more");
            for (size_t i = 0; i < o->files.size(); ++i) {
              refuse_same_file(o->files[i], o->out);
              struct stat a {};
              if (::stat(o->files[i].c_str(), &a) != 0) continue;  // open() says why
              for (size_t k = 0; k < i; ++k) {
                struct stat b {};
                if (::stat(o->files[k].c_str(), &b) == 0 && a.st_dev == b.st_dev &&
                    a.st_ino == b.st_ino)
                  throw trace_error(fmt::format("{} and {} are the same file: a trace merges once",
                                                o->files[k], o->files[i]));
              }
            }
            std::vector<trace_reader> readers;
            readers.reserve(o->files.size());
            for (const auto& f : o->files) readers.push_back(or_throw(trace_reader::open(f)));
            std::vector<trace_reader*> inputs;
            for (auto& r : readers) inputs.push_back(&r);
            const auto r = or_throw(transform::merge(inputs, o->files, o->out, o->m));
            fmt::print("merge: {} traces, {} hosts: {} events, an initial tree of {} entries ({} "
                       "found by several traces, {} left to the trace that creates them) → {}\n",
                       o->files.size(), r.hosts, r.events, r.tree, r.joined, r.created, o->out);
            if (r.differing_system)
              fmt::print("  {} system files (/usr, /etc...) differed between hosts: replayed as the "
                         "first host's\n",
                         r.differing_system);
            for (const std::string& p : r.shared_unmet)
              fmt::print("  --shared {}: no path of the traces lies beneath it (a typo? every path "
                         "outside the system directories is its host's own)\n",
                         p);
            if (!r.host_dirs.empty()) {
              std::string dirs;
              for (const auto& d : r.host_dirs) dirs += (dirs.empty() ? "hosts/" : ", hosts/") + d;
              fmt::print("  each host's own paths (outside {} and the system directories) replay "
                         "beneath TARGET/{}\n",
                         fmt::join(o->m.shared, ", "), dirs);
            } else if (r.united) {
              fmt::print("  {} file{} outside the system directories (/usr, /etc...) named by "
                         "several traces {} one file for all hosts: right for a shared file "
                         "system; if they are each host's own (/tmp, /home), merge with --shared "
                         "MOUNT_POINT\n",
                         r.united, r.united == 1 ? "" : "s", r.united == 1 ? "is" : "are");
            }
            for (size_t i = 0; i < o->files.size(); ++i)
              fmt::print("  {}: starts at {:.6f} s\n", o->files[i], r.offsets_ns[i] / 1e9);
            return 0;
          }};
}

}  // namespace fsrr::cli
