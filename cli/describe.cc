#include "describe.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <cstring>

#include <fmt/format.h>

namespace fsrr {
namespace {

// A name in quotes, JSON-escaped; a name that is not UTF-8 (Linux names are bytes, and a
// trace may hold anything) gets its other bytes as \xNN, the way strace prints them.
std::string quoted(const std::string& s) {
  try {
    return nlohmann::json(s).dump();
  } catch (const nlohmann::json::type_error&) {
    std::string q = "\"";
    for (const unsigned char c : s) {
      if (c == '"' || c == '\\')
        q += fmt::format("\\{}", static_cast<char>(c));
      else if (c >= 0x20 && c < 0x7f)
        q += static_cast<char>(c);
      else
        q += fmt::format("\\x{:02x}", c);
    }
    return q + '"';
  }
}

std::string errno_text(int64_t result) {
  if (result >= 0 || result < -4095) return fmt::format("{}", result);
  const char* name = strerrorname_np(static_cast<int>(-result));
  return fmt::format("-1 {} ({})", name ? name : "?", std::strerror(static_cast<int>(-result)));
}

}  // namespace

std::string open_flags_text(uint32_t flags) {
  static const std::pair<uint32_t, const char*> names[] = {
      {O_CREAT, "O_CREAT"},       {O_EXCL, "O_EXCL"},         {O_NOCTTY, "O_NOCTTY"},
      {O_TRUNC, "O_TRUNC"},       {O_APPEND, "O_APPEND"},     {O_NONBLOCK, "O_NONBLOCK"},
      {O_DSYNC, "O_DSYNC"},       {O_DIRECT, "O_DIRECT"},     {O_LARGEFILE, "O_LARGEFILE"},
      {O_DIRECTORY, "O_DIRECTORY"}, {O_NOFOLLOW, "O_NOFOLLOW"}, {O_NOATIME, "O_NOATIME"},
      {O_CLOEXEC, "O_CLOEXEC"},   {O_PATH, "O_PATH"},
  };
  std::string s;
  const uint32_t acc = flags & O_ACCMODE;
  s = acc == O_RDONLY ? "O_RDONLY" : acc == O_WRONLY ? "O_WRONLY" : acc == O_RDWR ? "O_RDWR" : "3";
  uint32_t rest = flags & ~static_cast<uint32_t>(O_ACCMODE);
  if ((rest & O_SYNC) == static_cast<uint32_t>(O_SYNC)) {
    s += "|O_SYNC";
    rest &= ~static_cast<uint32_t>(O_SYNC);
  }
  if ((rest & O_TMPFILE) == static_cast<uint32_t>(O_TMPFILE)) {
    s += "|O_TMPFILE";
    rest &= ~static_cast<uint32_t>(O_TMPFILE);
  }
  for (const auto& [bit, name] : names)
    if (rest & bit) {
      s += '|';
      s += name;
      rest &= ~bit;
    }
  if (rest) s += fmt::format("|{:#x}", rest);
  return s;
}

namespace {

// Where root `root` (from 1) of a trace of several roots replays beneath TARGET: "root2", or
// "hosts/NAME" for a host's own paths (merge --shared).
std::string placed_dir(trace_reader& trace, uint32_t root) {
  const auto& roots = trace.roots();
  if (root >= 1 && root <= roots.size())
    if (const auto name = host_root_name(trace.string(roots[root - 1].where)))
      return "hosts/" + *name;
  return fmt::format("root{}", root);
}

// A path as the process saw it; in a trace of several roots, with its root: "root2:/etc",
// "hosts/vm2:/tmp/x".
std::string shown_path(trace_reader& trace, path_id p) {
  if (trace.roots().size() < 2 || p == no_id) return trace.path_string(p);
  return fmt::format("{}:{}", placed_dir(trace, trace.root_of(p)), trace.path_string(p));
}

// The JSON of a path: "path" as the process saw it, and with several roots "root".
void path_json(trace_reader& trace, nlohmann::json& j, const char* key, path_id p) {
  j[key] = trace.path_string(p);
  if (trace.roots().size() > 1 && p != no_id) j[std::string(key) + "_root"] = trace.root_of(p);
}

// The stream of a stream_read/stream_write, as /proc/PID/fd shows such files.
std::string stream_text(trace_reader& trace, file_id id) {
  if (id == no_id) return "?";
  const file_info& f = trace.file(id);
  switch (f.type & S_IFMT) {
    case S_IFIFO:
      return fmt::format("pipe:[{}]", f.ino);
    case S_IFSOCK:
      return fmt::format("socket:#{}", f.ino);
    default:
      return fmt::format("dev:{}:{}", major(f.dev), minor(f.dev));
  }
}

template <typename Arg>
void describe_args(trace_reader& trace, const event& e, Arg& arg) {
  const uint32_t f = info(e.kind).fields;
  if (f & F_PATH) arg(quoted(shown_path(trace, e.path)));
  if (f & F_FD2) arg(fmt::format("{}", e.fd2));
  if (f & F_PATH2) arg(quoted(shown_path(trace, e.path2)));
  const op_class cls = info(e.kind).cls;
  if ((f & F_AUX) && (e.kind == op::symlink || e.kind == op::symlinkat || cls == op_class::xattr))
    arg(quoted(trace.string(static_cast<string_id>(e.aux))));
  else if (f & F_AUX)
    arg(fmt::format("{}={:#x}", e.kind == op::file_setattr ? "xflags" : "aux", e.aux));
  if (f & F_OFFSET) arg(fmt::format("@{}", e.offset));
  if (f & F_OFFSET2) arg(fmt::format("@{}", e.offset2));
  if (f & F_SIZE) arg(fmt::format("{}", e.size));
  if (f & F_FLAGS)
    arg(cls == op_class::open ? open_flags_text(e.flags) : fmt::format("{:#x}", e.flags));
  if (f & F_MODE) arg(fmt::format("{:#o}", e.mode));
}

const char* engine_name(engine en) {
  switch (en) {
    case engine::io_uring:
      return "io_uring";
    case engine::aio:
      return "aio";
    case engine::mapped:
      return "mapped";
    default:
      return "syscall";
  }
}

// " [io_uring 1 link,fixed_file]": the engine, its ring or context, the SQE's flags.
std::string via_text(const event& e) {
  if (!has(e.kind, F_VIA) || engine_of(e.via) == engine::syscall) return {};
  std::string s = fmt::format(" [{}", engine_name(engine_of(e.via)));
  if (queue_of(e.via)) s += fmt::format(" {}", queue_of(e.via));
  const uint32_t q = sqe_flags_of(e.via);
  const char* sep = " ";
  auto flag = [&](bool on, const char* n) {
    if (!on) return;
    s += sep;
    s += n;
    sep = ",";
  };
  flag(q & sqe_fixed_file, "fixed_file");
  flag(q & sqe_drain, "drain");
  flag(q & sqe_link, "link");
  flag(q & sqe_hardlink, "hardlink");
  flag(q & sqe_async, "async");
  flag(e.via & via_fixed_buffer, "fixed_buffer");
  flag(e.via & via_sqpoll, "sqpoll");
  return s + "]";
}

}  // namespace

std::string describe(trace_reader& trace, const event& e) {
  const thread_info& t = trace.thread(e.thread);
  const uint32_t f = info(e.kind).fields;
  std::string args;
  auto arg = [&](const std::string& a) {
    if (!args.empty()) args += ", ";
    args += a;
  };
  if (f & F_FD) arg(fmt::format("{}", e.fd));
  const op_class cls = info(e.kind).cls;
  if (cls == op_class::stream) {  // stream_write(1, pipe:[4711], write, 10240)
    arg(stream_text(trace, e.file));
    arg(e.aux < op_count ? std::string(name(static_cast<op>(e.aux))) : "?");
    arg(fmt::format("{}", e.size));
  } else {
    describe_args(trace, e, arg);
  }
  return fmt::format("{}.{:06} [{}{}] {}({}) = {} <{}.{:06}>{}", e.ts / 1000000000,
                     e.ts % 1000000000 / 1000, host_prefix(trace.header(), t.host), t.tid,
                     name(e.kind), args, errno_text(e.result),
                     e.dur / 1000000000, e.dur % 1000000000 / 1000, via_text(e));
}


nlohmann::json to_json(trace_reader& trace, const event& e) {
  const thread_info& t = trace.thread(e.thread);
  const uint32_t f = info(e.kind).fields;
  nlohmann::json j = {{"ts", e.ts}, {"dur", e.dur},       {"tid", t.tid},
                      {"pid", t.pid}, {"op", name(e.kind)}, {"result", e.result}};
  if (e.result < 0 && e.result >= -4095) {
    const char* n = strerrorname_np(static_cast<int>(-e.result));
    j["errno"] = n ? n : "?";
  }
  if (f & F_FD) j["fd"] = e.fd;
  if (f & F_FD2) j["fd2"] = e.fd2;
  j["comm"] = trace.string(t.comm);
  if (t.host_tid && t.host_tid != t.tid) j["host_tid"] = t.host_tid;
  if (t.host_pid && t.host_pid != t.pid) j["host_pid"] = t.host_pid;
  const bool hosts = !trace.header().hosts.empty();
  if (hosts) j["host"] = t.host;
  if (f & F_PATH) path_json(trace, j, "path", e.path);
  if (f & F_PATH2) path_json(trace, j, "path2", e.path2);
  if (f & F_FILE && e.file != no_id) {
    const file_info& fi = trace.file(e.file);
    j["file"] = {{"dev", fi.dev}, {"ino", fi.ino}, {"gen", fi.gen}};
    if (hosts) j["file"]["host"] = fi.host;
  }
  if (f & F_FILE2 && e.file2 != no_id) {
    const file_info& fi = trace.file(e.file2);
    j["file2"] = {{"dev", fi.dev}, {"ino", fi.ino}, {"gen", fi.gen}};
    if (hosts) j["file2"]["host"] = fi.host;
  }
  if (f & F_OFFSET) j["offset"] = e.offset;
  if (f & F_OFFSET2) j["offset2"] = e.offset2;
  if (f & F_SIZE) j["size"] = e.size;
  if (f & F_FLAGS) j["flags"] = e.flags;
  if (f & F_MODE) j["mode"] = e.mode;
  if (f & F_AUX) j["aux"] = e.aux;
  if (e.kind == op::file_setattr) j["xflags"] = e.aux;
  if ((f & F_VIA) && engine_of(e.via) != engine::syscall) {
    j["engine"] = engine_name(engine_of(e.via));
    if (queue_of(e.via)) j["queue"] = queue_of(e.via);
    if (engine_of(e.via) == engine::io_uring) {
      j["sqe_flags"] = sqe_flags_of(e.via);
      j["fixed_buffer"] = (e.via & via_fixed_buffer) != 0;
      j["sqpoll"] = (e.via & via_sqpoll) != 0;
    }
  }
  if (info(e.kind).cls == op_class::stream) {
    j["stream"] = stream_text(trace, e.file);
    if (e.aux < op_count) j["via"] = name(static_cast<op>(e.aux));
  }
  if ((f & F_AUX) &&
      (e.kind == op::symlink || e.kind == op::symlinkat || info(e.kind).cls == op_class::xattr))
    j["name"] = trace.string(static_cast<string_id>(e.aux));
  return j;
}

nlohmann::json to_json(trace_reader& trace, const tree_entry& e) {
  const char* type = S_ISREG(e.mode)    ? "file"
                     : S_ISDIR(e.mode)  ? "dir"
                     : S_ISLNK(e.mode)  ? "symlink"
                     : S_ISFIFO(e.mode) ? "fifo"
                     : S_ISSOCK(e.mode) ? "socket"
                                        : "device";
  nlohmann::json j = {{"type", type},       {"mode", e.mode & 07777}, {"uid", e.uid},
                      {"gid", e.gid},         {"size", e.size},         {"mtime_ns", e.mtime_ns}};
  path_json(trace, j, "tree", e.path);
  if (e.allocated < e.size) j["allocated"] = e.allocated;
  if (e.nlink > 1) j["nlink"] = e.nlink;
  if (e.link_group) j["link_group"] = e.link_group;
  if (e.target) j["target"] = trace.string(e.target);
  if (!e.xattrs.empty()) {
    auto& x = j["xattrs"] = nlohmann::json::object();
    for (const auto& a : e.xattrs) x[trace.string(a.name)] = a.size;
  }
  if (!e.extents.empty()) {
    auto& x = j["extents"] = nlohmann::json::array();
    for (const auto& a : e.extents) x.push_back({a.offset, a.length});
  }
  return j;
}

namespace {

std::vector<std::string> incomplete_reasons(uint64_t bits) {
  static const std::pair<uint64_t, const char*> names[] = {
      {incomplete_compat_syscalls, "32-bit syscalls counted, not decoded"},
      {incomplete_io_uring, "io_uring I/O is invisible to syscall tracing"},
      {incomplete_uring_ops,
       "io_uring requests fsrr does not follow (splices from registered fds into pipes, "
       "driver commands)"},
      {incomplete_aio, "AIO is invisible to syscall tracing"},
      {incomplete_shared_mmap, "writes through a shared mapping are invisible"},
      {incomplete_path_unresolved, "some paths could not be resolved"},
      {incomplete_path_filter,
       "a --path directory was replaced while recording: ops through fds beneath the new one "
       "may be missing"},
  };
  std::vector<std::string> out;
  for (const auto& [bit, text] : names)
    if (bits & bit) out.emplace_back(text);
  return out;
}

}  // namespace

nlohmann::json info_json(trace_reader& trace) {
  const header_info& h = trace.header();
  const trace_summary& s = trace.summary();
  nlohmann::json ops = nlohmann::json::object();
  for (size_t i = 0; i < op_count; ++i)
    if (s.op_counts[i]) ops[std::string(op_table[i].name)] = s.op_counts[i];
  nlohmann::json nonfile = nlohmann::json::object();
  for (const auto& [key, n] : s.nonfile)
    nonfile[std::string(name(key.second))][std::string(name(key.first))] = n;
  nlohmann::json roots = nlohmann::json::array();
  for (size_t k = 0; k < trace.roots().size(); ++k) {
    const trace_root& r = trace.roots()[k];
    roots.push_back({{"root", k + 1},
                     {"where", trace.string(r.where)},
                     {"mnt_ns", r.mnt_ns},
                     {"dev", r.dev},
                     {"ino", r.ino},
                     {"placed_at", trace.roots().size() > 1
                                       ? placed_dir(trace, static_cast<uint32_t>(k + 1))
                                       : ""}});
  }
  nlohmann::json hosts = nlohmann::json::array();
  for (size_t k = 0; k < h.hosts.size(); ++k) {
    const host_info& x = h.hosts[k];
    hosts.push_back({{"host", k},
                     {"hostname", x.name},
                     {"kernel", x.kernel},
                     {"trace_id", x.trace_id},
                     {"command", x.command},
                     {"start_realtime_ns", x.clock_realtime_ns},
                     {"offset_ns", x.offset_ns},
                     {"cpus", x.cpus}});
  }
  return {
      {"roots", roots},
      {"hosts", hosts},
      {"format_version", fmt::format("{}.{}", h.format_major, h.format_minor)},
      {"time_unit_ns", h.time_unit_ns},
      {"kind", h.kind == trace_kind::snapshot ? "snapshot" : "recording"},
      {"writer", h.writer},
      {"complete", trace.complete()},
      {"footer", trace.has_footer()},
      {"damage", trace.damage()},
      {"incomplete_reasons", incomplete_reasons(s.incomplete)},
      {"hostname", h.hostname},
      {"derived", h.derived},
      {"anonymized", !h.key_id.empty()},
      {"key_id", h.key_id},
      {"trace_id", h.trace_id},
      {"kernel", h.kernel},
      {"command", h.command},
      {"start_realtime_ns", h.clock_realtime_ns},
      {"duration_ns", s.duration_ns()},
      {"events", s.events},
      {"lost_events", s.lost_events},
      {"pauses", s.pauses},
      {"paused_ns", s.paused_ns},
      {"filtered_events", s.filtered},
      {"unknown_ops", s.unknown_ops},
      {"ops", ops},
      {"nonfile_ops", nonfile},
      {"processes", s.processes},
      {"threads", s.threads},
      {"files", s.files},
      {"paths", s.paths},
      {"bytes_read", s.bytes_read},
      {"bytes_written", s.bytes_written},
      {"trace_bytes", trace.file_bytes()},
      {"blocks", trace.block_count()},
      {"bytes_per_event", s.events ? double(trace.file_bytes()) / s.events : 0.0},
      {"tree",
       {{"files", s.tree.files},
        {"dirs", s.tree.dirs},
        {"symlinks", s.tree.symlinks},
        {"other", s.tree.other},
        {"bytes", s.tree.bytes}}},
  };
}

std::string info_text(trace_reader& trace) {
  const nlohmann::json j = info_json(trace);
  const trace_summary& s = trace.summary();
  std::string out;
  auto line = [&](std::string_view key, const std::string& value) {
    out += fmt::format("{:<14} {}\n", key, value);
  };
  std::string cmd;
  for (const auto& c : trace.header().command) cmd += (cmd.empty() ? "" : " ") + c;
  line("format", fmt::format("{} ({}, written by {})", j["format_version"].get<std::string>(),
                             j["kind"].get<std::string>(), j["writer"].get<std::string>()));
  if (!cmd.empty()) line("command", cmd);
  if (!trace.header().derived.empty())
    line("made by", trace.header().key_id.empty()
                        ? trace.header().derived
                        : fmt::format("{} (names are digests, key id {})", trace.header().derived,
                                      trace.header().key_id));
  line("host", fmt::format("{} (Linux {})", trace.header().hostname, trace.header().kernel));
  if (!trace.header().trace_id.empty()) line("trace id", trace.header().trace_id);
  for (size_t k = 0; k < trace.header().hosts.size(); ++k) {
    const host_info& x = trace.header().hosts[k];
    std::string xcmd;
    for (const auto& c : x.command) xcmd += (xcmd.empty() ? "" : " ") + c;
    line(k ? "" : "hosts",
         fmt::format("{}: {} (Linux {}), trace {}, from {:.6f} s: {}", k, x.name, x.kernel,
                     x.trace_id, x.offset_ns / 1e9, xcmd));
  }
  std::string state = trace.complete() ? "complete" : "INCOMPLETE";
  if (!trace.has_footer()) state += ": no footer (the writer did not finish)";
  if (!trace.damage().empty()) state += "; " + trace.damage();
  if (s.lost_events) state += fmt::format("; {} events lost", s.lost_events);
  for (const auto& r : j["incomplete_reasons"]) state += "; " + r.get<std::string>();
  line("state", state);
  line("duration", fmt::format("{:.6f} s", s.duration_ns() / 1e9));
  line("events", fmt::format("{} ({} lost)", s.events, s.lost_events));
  if (s.filtered)
    line("filtered", fmt::format("{} events outside the recorded directories (--path), not stored",
                                 s.filtered));
  if (s.pauses)
    line("paused", fmt::format("{} times, {:.3f} s: the workload waited for the recorder",
                               s.pauses, s.paused_ns / 1e9));
  line("processes", fmt::format("{} ({} threads)", s.processes, s.threads));
  if (trace.roots().size() > 1)
    for (size_t k = 0; k < trace.roots().size(); ++k) {
      const trace_root& r = trace.roots()[k];
      line(k ? "" : "roots",
           fmt::format("root{}: {} (mount namespace {}), replayed in TARGET/{}", k + 1,
                       trace.string(r.where), r.mnt_ns,
                       placed_dir(trace, static_cast<uint32_t>(k + 1))));
    }
  line("files", fmt::format("{} touched, {} paths", s.files, s.paths));
  line("bytes", fmt::format("{} read, {} written", s.bytes_read, s.bytes_written));
  line("tree", fmt::format("{} files, {} dirs, {} symlinks, {} other, {} bytes", s.tree.files,
                           s.tree.dirs, s.tree.symlinks, s.tree.other, s.tree.bytes));
  line("trace", fmt::format("{} bytes in {} blocks{}", trace.file_bytes(), trace.block_count(),
                            s.events ? fmt::format(", {:.2f} bytes/event",
                                                   double(trace.file_bytes()) / s.events)
                                     : ""));
  std::vector<std::pair<uint64_t, std::string_view>> by_count;
  for (size_t i = 0; i < op_count; ++i)
    if (s.op_counts[i]) by_count.emplace_back(s.op_counts[i], op_table[i].name);
  std::sort(by_count.rbegin(), by_count.rend());
  if (!by_count.empty()) out += fmt::format("\n{:>10}  {}\n", "calls", "syscall");
  for (const auto& [n, nm] : by_count) out += fmt::format("{:>10}  {}\n", n, nm);
  if (!s.nonfile.empty()) {
    out += fmt::format("\n{:>10}  {}\n", "calls", "on non-files (not replayed)");
    for (const auto& [key, n] : s.nonfile)
      out += fmt::format("{:>10}  {} on {}\n", n, name(key.first), name(key.second));
  }
  return out;
}

}  // namespace fsrr
