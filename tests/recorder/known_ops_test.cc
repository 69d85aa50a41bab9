// A program issuing known operations, recorded: exactly those operations, offsets, sizes,
// paths and results come back.
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <memory>
#include <thread>
#include <tuple>

#include <catch2/catch.hpp>

#include "helpers.h"

using namespace fsrr;
using fsrr::test::trace;

namespace {

std::string real(const std::string& p) {
  char buf[PATH_MAX];
  REQUIRE(::realpath(p.c_str(), buf) != nullptr);
  return buf;
}

std::vector<const event*> on_file(const trace& t, op o, file_id f) {
  std::vector<const event*> r;
  for (const auto* e : t.all(o))
    if (e->file == f) r.push_back(e);
  return r;
}

}  // namespace

// The "ops" workload, recorded once for all the sections that look at it.
struct ops_recording {
  test::temp_dir tmp;
  std::string dir;
  recorder::record_result result;
  std::unique_ptr<trace> t;

  ops_recording() : dir(real(tmp.path())) {
    test::write_file(dir + "/pre.txt", 1000);
    recorder::record_options o;
    o.output = tmp / "ops.trace";
    o.command = {test::workload(), "ops", dir};
    result = test::record(o);
    t = std::make_unique<trace>(o.output);
  }
  static ops_recording& get() {
    static ops_recording r;
    return r;
  }
};

TEST_CASE("a recorded program's operations come back exactly", "[recorder][ops]") {
  REQUIRE_RECORDING();
  ops_recording& rec = ops_recording::get();
  REQUIRE(rec.result.exit_status == 0);
  REQUIRE(rec.result.lost == 0);
  REQUIRE(rec.result.unresolved == 0);
  trace& t = *rec.t;
  const std::string& d = rec.dir;
  const std::string w = real(test::workload());

  SECTION("exec, then a relative chdir") {
    REQUIRE(t.at(op::execve, w).size() == 2);  // the command, and its child's exec
    const auto cds = t.at(op::chdir, d);       // the command's chdir(DIR), the child's chdir(".")
    REQUIRE(cds.size() == 2);
    CHECK((cds[0]->result == 0 && cds[1]->result == 0));
  }

  SECTION("relative open, write, pwrite, writev, lseek, dup2") {
    const event& open = t.one(op::openat, d + "/a.txt");
    CHECK(open.flags == (O_CREAT | O_WRONLY | O_TRUNC));
    CHECK(open.mode == 0640);
    const file_id a = open.file;
    REQUIRE(a != no_id);
    const auto writes = on_file(t, op::write, a);
    REQUIRE(writes.size() == 2);
    CHECK(writes[0]->fd == open.result);
    CHECK((writes[0]->offset == 0 && writes[0]->size == 100 && writes[0]->result == 100));
    CHECK(writes[1]->fd == 10);  // through the dup2'ed fd, after lseek to 0
    CHECK((writes[1]->offset == 0 && writes[1]->size == 3 && writes[1]->result == 3));
    const auto pw = on_file(t, op::pwrite64, a);
    REQUIRE(pw.size() == 1);
    CHECK((pw[0]->offset == 200 && pw[0]->size == 10 && pw[0]->result == 10));
    const auto wv = on_file(t, op::writev, a);
    REQUIRE(wv.size() == 1);
    CHECK((wv[0]->offset == 100 && wv[0]->size == 12 && wv[0]->aux == 2 && wv[0]->result == 12));
    const auto seek = on_file(t, op::lseek, a);
    REQUIRE(seek.size() == 1);
    CHECK((seek[0]->offset == 0 && seek[0]->aux == SEEK_SET && seek[0]->result == 0));
    const auto dup = on_file(t, op::dup2, a);
    REQUIRE(dup.size() == 1);
    CHECK((dup[0]->fd == open.result && dup[0]->fd2 == 10 && dup[0]->result == 10));
  }

  SECTION("a dirfd: openat, pread, readv") {
    CHECK(t.one(op::mkdir, d + "/sub").mode == 0750);
    const event& open = t.one(op::openat, d + "/sub/b.txt");
    CHECK(open.flags == (O_CREAT | O_RDWR));
    const file_id b = open.file;
    const auto pr = on_file(t, op::pread64, b);
    REQUIRE(pr.size() == 1);
    CHECK((pr[0]->offset == 10 && pr[0]->size == 20 && pr[0]->result == 20));
    const auto rv = on_file(t, op::readv, b);
    REQUIRE(rv.size() == 1);
    CHECK((rv[0]->offset == 5 && rv[0]->size == 10 && rv[0]->aux == 2 && rv[0]->result == 10));
  }

  SECTION("names through a symlink resolve as the kernel resolved them") {
    const event& link = t.one(op::symlink, d + "/link");
    CHECK(t.reader.string(static_cast<string_id>(link.aux)) == "sub");
    const file_id b = t.one(op::openat, d + "/sub/b.txt").file;
    const event& open = t.one(op::open, d + "/sub/b.txt");  // open("link/b.txt")
    CHECK(open.file == b);
    const auto reads = on_file(t, op::read, b);
    REQUIRE(reads.size() == 1);
    CHECK((reads[0]->offset == 0 && reads[0]->size == 7 && reads[0]->result == 7));
    const event& st = t.one(op::stat, d + "/sub/b.txt");  // stat("link/b.txt")
    CHECK((st.result == 0 && st.file == b));
    const event& lst = t.one(op::lstat, d + "/link");
    CHECK((lst.result == 0 && lst.file != b && lst.file != no_id));
  }

  SECTION("renames name both ends and the file moved") {
    const file_id a = t.one(op::openat, d + "/a.txt").file;
    const file_id b = t.one(op::openat, d + "/sub/b.txt").file;
    const event& r1 = t.one(op::rename, d + "/a.txt");
    CHECK((t.path(r1.path2) == d + "/c.txt" && r1.file == a && r1.result == 0));
    const event& r2 = t.one(op::renameat, d + "/sub/b.txt");
    CHECK((t.path(r2.path2) == d + "/d.txt" && r2.file == b && r2.result == 0));
    const event& un = t.one(op::unlink, d + "/c.txt");
    CHECK((un.file == a && un.result == 0));
  }

  SECTION("O_APPEND writes land at the end of the file") {
    const event& open = t.one(op::openat, d + "/pre.txt");
    CHECK(open.flags == (O_WRONLY | O_APPEND));
    const auto writes = on_file(t, op::write, open.file);
    REQUIRE(writes.size() == 2);
    CHECK((writes[0]->offset == 1000 && writes[0]->size == 10));
    CHECK((writes[1]->offset == 1010 && writes[1]->size == 20));
  }

  SECTION("copy_file_range: offsets from the pointer, -1 for NULL") {
    const file_id in = t.one(op::openat, d + "/c.txt").file;
    CHECK(in == t.one(op::openat, d + "/a.txt").file);  // renamed, same inode
    const file_id out = t.one(op::openat, d + "/copy.txt").file;
    const auto copies = t.all(op::copy_file_range);
    REQUIRE(copies.size() == 2);
    CHECK((copies[0]->file == in && copies[0]->file2 == out));
    CHECK((copies[0]->offset == -1 && copies[0]->offset2 == 50 && copies[0]->size == 100));
    CHECK(copies[0]->result == 100);
    CHECK((copies[1]->offset == -1 && copies[1]->offset2 == -1 && copies[1]->size == 60));
    CHECK(copies[1]->result == 60);
  }

  SECTION("threads: one trace thread each, one process") {
    const event& o1 = t.one(op::openat, d + "/t1.txt");
    const event& o2 = t.one(op::openat, d + "/t2.txt");
    CHECK(o1.thread != o2.thread);
    CHECK(t.thread(o1).pid == t.thread(o2).pid);
    CHECK(t.thread(o1).tid != t.thread(o1).pid);
    CHECK(t.thread(o1).fd_table == t.thread(o2).fd_table);  // CLONE_FILES
    for (int i : {1, 2}) {
      const event& o = i == 1 ? o1 : o2;
      const auto pw = on_file(t, op::pwrite64, o.file);
      REQUIRE(pw.size() == 1);
      CHECK((pw[0]->offset == 4096 * i && pw[0]->size == 64 && pw[0]->thread == o.thread));
    }
    const auto threads = t.all(op::clone3);
    REQUIRE(threads.size() == 2);
    CHECK(threads[0]->aux == t.thread(o1).fd_table);
  }

  SECTION("fork and exec: the child's operations, before and after exec") {
    const auto forks = t.all(op::clone);
    REQUIRE(forks.size() == 1);
    const event& fork = *forks[0];
    const event& before = t.one(op::openat, d + "/child.txt");
    const event& after = t.one(op::openat, d + "/exec.txt");
    const auto& child = t.thread(before);
    CHECK(child.tid == fork.result);
    CHECK(child.pid == fork.result);
    CHECK(child.ppid == t.thread(fork).pid);
    CHECK(fork.aux != t.thread(fork).fd_table);  // fork copies the fd table
    CHECK(t.thread(after).tid == child.tid);
    const auto execs = t.at(op::execve, w);
    CHECK((execs[1]->thread == before.thread && execs[1]->result == 0));
    const auto w1 = on_file(t, op::write, before.file);
    const auto w2 = on_file(t, op::write, after.file);
    REQUIRE((w1.size() == 1 && w2.size() == 1));
    CHECK((w1[0]->size == 7 && w2[0]->size == 9));
  }

  SECTION("the initial tree: what existed before, as it was") {
    const tree_entry* pre = t.tree_entry_at(d + "/pre.txt");
    REQUIRE(pre != nullptr);
    CHECK(pre->size == 1000);  // before the appends
    CHECK(S_ISREG(pre->mode));
    const tree_entry* dir = t.tree_entry_at(d);
    REQUIRE(dir != nullptr);
    CHECK(S_ISDIR(dir->mode));
    for (const char* made : {"/a.txt", "/sub", "/sub/b.txt", "/link", "/copy.txt", "/t1.txt"})
      CHECK(t.tree_entry_at(d + made) == nullptr);
  }
}

// A workload mode recorded into a fresh directory.
struct mode_recording {
  test::temp_dir tmp;
  std::string dir;
  recorder::record_result result;
  std::unique_ptr<trace> t;

  explicit mode_recording(const std::string& mode) : dir(real(tmp.path())) {
    recorder::record_options o;
    o.output = tmp / (mode + ".trace");
    o.command = {test::workload(), mode, dir};
    result = test::record(o);
    REQUIRE(result.exit_status == 0);
    REQUIRE(result.lost == 0);
    t = std::make_unique<trace>(o.output);
  }
};

TEST_CASE("procfs, sysfs, device and pipe operations are counted, not recorded",
          "[recorder][pseudo]") {
  REQUIRE_RECORDING();
  mode_recording rec("pseudo");
  trace& t = *rec.t;
  const auto on = [&](const std::string& prefix) {
    size_t n = 0;
    for (const auto& e : t.events)
      for (path_id p : {e.path, e.path2}) n += p && t.path(p).rfind(prefix, 0) == 0;
    return n;
  };
  for (const char* prefix : {"/proc/", "/sys/", "/dev/null"}) {
    INFO(prefix);
    CHECK(on(prefix) == 0);
    for (const auto& e : t.reader.tree()) CHECK(t.path(e.path).rfind(prefix, 0) != 0);
  }
  CHECK(t.tree_entry_at("/proc") == nullptr);
  CHECK(t.tree_entry_at("/sys") == nullptr);
  const auto& nonfile = t.reader.summary().nonfile;
  const auto count = [&](op o, fd_kind k) {
    const auto it = nonfile.find({o, k});
    return it == nonfile.end() ? uint64_t{0} : it->second;
  };
  CHECK(count(op::read, fd_kind::other) == 1);        // /proc/self/stat
  CHECK(count(op::write, fd_kind::other) == 1);       // /dev/null
  CHECK(count(op::newfstatat, fd_kind::other) == 2);  // /proc/self/status, /dev/null
  CHECK(count(op::access, fd_kind::other) == 1);      // /sys/kernel
  CHECK(count(op::openat, fd_kind::other) >= 2);
  CHECK((count(op::read, fd_kind::pipe) == 1 && count(op::write, fd_kind::pipe) == 1));
  // the storage file next to them is recorded as usual
  const event& open = t.one(op::openat, rec.dir + "/real.txt");
  REQUIRE(t.all(op::write).size() == 1);
  CHECK(t.all(op::write)[0]->file == open.file);
}

TEST_CASE("setting a POSIX ACL records its permission bits in mode", "[recorder][xattr]") {
  REQUIRE_RECORDING();
  mode_recording rec("acl");
  trace& t = *rec.t;
  const std::string f = rec.dir + "/acl.txt";
  const file_id file = t.one(op::openat, f).file;
  const auto fset = t.all(op::fsetxattr);
  REQUIRE(fset.size() == 2);
  CHECK((fset[0]->file == file && fset[1]->file == file));
  CHECK(t.reader.string(static_cast<string_id>(fset[0]->aux)) == "system.posix_acl_access");
  CHECK(fset[0]->mode == (acl_mode_present | 0640));
  CHECK(t.reader.string(static_cast<string_id>(fset[1]->aux)) == "user.note");
  CHECK(fset[1]->mode == 0);  // not an ACL
  const event& masked = t.one(op::setxattr, f);
  CHECK(masked.size == 4 + 5 * 8);
  CHECK(masked.mode == (acl_mode_present | 0741));  // owner, mask (not group), other
  const event& dflt = t.one(op::lsetxattr, rec.dir + "/acl.d");
  CHECK(t.reader.string(static_cast<string_id>(dflt.aux)) == "system.posix_acl_default");
  CHECK(dflt.mode == (acl_mode_present | 0640));
}

TEST_CASE("the *xattrat and file_*attr calls record dirfd names, fds, names, sizes and flags",
          "[recorder][xattr]") {
  REQUIRE_RECORDING();
  mode_recording rec("xattrat");
  trace& t = *rec.t;
  const std::string x = rec.dir + "/sub/x.txt", link = rec.dir + "/sub/x.link";
  const event& open = t.one(op::openat, x);
  const file_id file = open.file;
  const auto name = [&](const event* e) { return t.reader.string(static_cast<string_id>(e->aux)); };

  const auto sets = t.at(op::setxattrat, x);
  REQUIRE(sets.size() == 3);
  // relative to the dirfd of sub, XATTR_CREATE
  CHECK((sets[0]->fd == -1 && name(sets[0]) == "user.a" && sets[0]->size == 5));
  CHECK((sets[0]->flags == XATTR_CREATE && sets[0]->mode == 0 && sets[0]->result == 0));
  // AT_EMPTY_PATH: the fd, and its file's path
  CHECK((sets[1]->fd == open.result && sets[1]->file == file && name(sets[1]) == "user.c"));
  CHECK((sets[1]->size == 3 && sets[1]->flags == AT_EMPTY_PATH && sets[1]->result == 0));
  // a POSIX ACL's permission bits, as for setxattr
  CHECK((name(sets[2]) == "system.posix_acl_access" && sets[2]->size == 28));
  CHECK((sets[2]->mode == (acl_mode_present | 0640) && sets[2]->result == 0));
  const event& on_link = t.one(op::setxattrat, link);
  CHECK((name(&on_link) == "user.b" && on_link.flags == (AT_SYMLINK_NOFOLLOW | XATTR_CREATE)));
  CHECK(on_link.result == -EPERM);

  const event& get = t.one(op::getxattrat, link);  // followed, named as called
  CHECK((name(&get) == "user.a" && get.size == 64 && get.flags == 0 && get.result == 5));
  const event& list = t.one(op::listxattrat, x);
  CHECK((list.file == file && list.size == 100 && list.flags == 0 && list.result == 7));
  const auto removes = t.at(op::removexattrat, x);
  REQUIRE(removes.size() == 2);
  CHECK((removes[0]->fd == open.result && name(removes[0]) == "user.c"));
  CHECK((removes[0]->flags == AT_EMPTY_PATH && removes[0]->result == 0));
  CHECK((removes[1]->fd == -1 && name(removes[1]) == "user.none"));
  CHECK((removes[1]->flags == 0 && removes[1]->result == -ENODATA));

  const auto gets = t.at(op::file_getattr, x);
  REQUIRE(gets.size() == 2);
  CHECK((gets[0]->fd == -1 && gets[0]->size == 24 && gets[0]->flags == 0 && gets[0]->result == 0));
  CHECK((gets[1]->fd == open.result && gets[1]->file == file && gets[1]->size == 24));
  CHECK((gets[1]->flags == AT_EMPTY_PATH && gets[1]->result == 0));
  const event& get_link = t.one(op::file_getattr, link);
  CHECK((get_link.flags == AT_SYMLINK_NOFOLLOW && get_link.result == -EOPNOTSUPP));  // tmpfs
  const event& fset = t.one(op::file_setattr, x);
  CHECK((fset.size == 24 && fset.flags == 0 && fset.aux == 0x80 && fset.result == 0));
}

TEST_CASE("copy ops record the offset behind the pointer, -1 for NULL", "[recorder][copy]") {
  REQUIRE_RECORDING();
  mode_recording rec("copies");
  trace& t = *rec.t;
  const file_id in = t.one(op::openat, rec.dir + "/in.dat").file;
  const file_id out = t.one(op::openat, rec.dir + "/out.dat").file;
  const auto sf = t.all(op::sendfile);
  REQUIRE(sf.size() == 2);
  CHECK((sf[0]->file == out && sf[0]->file2 == in && sf[0]->offset == 300 && sf[0]->size == 40));
  CHECK((sf[1]->offset == -1 && sf[1]->size == 30 && sf[1]->result == 30));
  const auto sp = t.all(op::splice);
  REQUIRE(sp.size() == 2);
  CHECK((sp[0]->file == in && sp[0]->file2 == no_id));  // into a pipe
  CHECK((sp[0]->offset == 500 && sp[0]->offset2 == -1 && sp[0]->size == 20));
  CHECK((sp[1]->file == no_id && sp[1]->file2 == out));  // out of the pipe
  CHECK((sp[1]->offset == -1 && sp[1]->offset2 == -1));
  const auto cfr = t.all(op::copy_file_range);
  REQUIRE(cfr.size() == 2);
  CHECK((cfr[0]->offset == 10 && cfr[0]->offset2 == 700 && cfr[0]->size == 50));
  CHECK((cfr[1]->offset == -1 && cfr[1]->offset2 == -1 && cfr[1]->size == 60));
}

TEST_CASE("the CO-RE build records what the build for this kernel records", "[recorder][bpf]") {
  REQUIRE_RECORDING();
  ops_recording& exact = ops_recording::get();
  test::temp_dir tmp;
  const std::string d = real(tmp.path());
  test::write_file(d + "/pre.txt", 1000);
  recorder::record_options o;
  o.output = tmp / "portable.trace";
  o.command = {test::workload(), "ops", d};
  o.portable_bpf = true;
  const auto res = test::record(o);
  REQUIRE(res.exit_status == 0);
  CHECK(!res.exact_bpf);
  CHECK(exact.result.exact_bpf);  // built on this machine, for its kernel
  trace t(o.output);
  // The same calls with the same arguments and results; times, ids, directories, mapped
  // addresses, child tids, fd numbers and the order of the threads' calls differ.
  const auto shape = [](const trace& tr) {
    std::vector<std::tuple<op, int64_t, int64_t, uint64_t, int64_t, uint32_t, uint32_t>> r;
    for (const auto& e : tr.events) {
      if (e.kind == op::execve || e.kind == op::exit) continue;
      const op_class cls = info(e.kind).cls;  // fds depend on how the threads interleave
      const bool varies = cls == op_class::process || cls == op_class::open || e.kind == op::mmap;
      r.emplace_back(e.kind, e.offset, e.offset2, e.size, varies ? 0 : e.result, e.flags, e.mode);
    }
    return r;
  };
  auto a = shape(*exact.t), b = shape(t);
  std::sort(a.begin(), a.end());  // the two worker threads interleave as they may
  std::sort(b.begin(), b.end());
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    INFO("event " << i << ": " << name(std::get<0>(a[i])));
    CHECK(a[i] == b[i]);
  }
}

TEST_CASE("record --pid follows a running process, fds it opened before included",
          "[recorder][pid]") {
  REQUIRE_RECORDING();
  test::temp_dir tmp;
  const std::string d = real(tmp.path());
  test::write_file(d + "/held.txt", 10);
  int in[2], out[2];
  REQUIRE((::pipe(in) == 0 && ::pipe(out) == 0));
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(in[0], 0);
    ::dup2(out[1], 1);
    ::execl(test::workload().c_str(), test::workload().c_str(), "hold", d.c_str(), nullptr);
    ::_exit(127);
  }
  ::close(in[0]);
  ::close(out[1]);
  char ready[6] = {};
  REQUIRE(::read(out[0], ready, 6) == 6);  // "ready\n": held.txt is open, 3 bytes read

  recorder::record_options o;
  o.output = tmp / "pid.trace";
  o.pids = {pid};
  o.on_started = [&] { (void)!::write(in[1], "go\n", 3); };
  const auto res = test::record(o);
  int status = 0;
  ::waitpid(pid, &status, 0);
  ::close(in[1]);
  ::close(out[0]);
  REQUIRE((WIFEXITED(status) && WEXITSTATUS(status) == 0));
  REQUIRE(res.lost == 0);

  trace t(o.output);
  const event& bind = t.one(op::fd_bind, d + "/held.txt");
  CHECK(bind.offset == 3);
  CHECK(t.thread(bind).pid == pid);
  const auto reads = on_file(t, op::read, bind.file);
  REQUIRE(reads.size() == 1);
  CHECK((reads[0]->fd == bind.fd && reads[0]->offset == 3 && reads[0]->size == 5));
  CHECK(reads[0]->result == 5);
  const event& made = t.one(op::openat, d + "/out.txt");
  const auto writes = on_file(t, op::write, made.file);
  REQUIRE(writes.size() == 1);
  CHECK(writes[0]->size == 5);
  const tree_entry* held = t.tree_entry_at(d + "/held.txt");
  REQUIRE(held != nullptr);
  CHECK(held->size == 10);
}

TEST_CASE("a syscall interrupted and restarted is recorded twice", "[recorder][restart]") {
  REQUIRE_RECORDING();
  test::temp_dir tmp;
  recorder::record_options o;
  o.output = tmp / "restart.trace";
  o.command = {test::workload(), "restart", tmp.path()};
  REQUIRE(test::record(o).exit_status == 0);
  trace t(o.output);
  std::vector<const event*> mine;  // the waiting process's flock calls, not the holder's
  const auto opens = t.at(op::openat, real(tmp.path()) + "/lock");
  REQUIRE(!opens.empty());
  for (const auto* e : t.all(op::flock))
    if (e->thread == opens.front()->thread) mine.push_back(e);
  REQUIRE(mine.size() == 2);
  CHECK(mine[0]->result == -512);  // -ERESTARTSYS, then restarted (SA_RESTART)
  CHECK(mine[1]->result == 0);
  CHECK(mine[0]->flags == LOCK_EX);
}

TEST_CASE("32-bit calls mark the trace incomplete, an io_uring ring and a shared mapping not",
          "[recorder][incomplete]") {
  REQUIRE_RECORDING();
  test::temp_dir tmp;
  recorder::record_options o;
  o.output = tmp / "invisible.trace";
  o.command = {test::workload(), "invisible", tmp.path()};
  REQUIRE(test::record(o).exit_status == 0);
  trace t(o.output);
  const uint64_t bits = t.reader.summary().incomplete;
  // the ring's requests are followed one by one (tests/e2e/engines_test.cc): a ring alone
  // hides nothing
  CHECK(!(bits & incomplete_io_uring));
  CHECK(!(bits & incomplete_uring_ops));
  // the byte stored through the shared mapping dirtied page 0 of mm.dat (4096 bytes long):
  // a pwrite64 of that page through the fd the trace gives the mapped file
  CHECK(!(bits & incomplete_shared_mmap));
  std::vector<const event*> mapped;
  for (const auto* e : t.all(op::pwrite64))
    if (e->fd >= mapped_fd_base) mapped.push_back(e);
  REQUIRE(mapped.size() == 1);
  CHECK(mapped[0]->offset == 0);
  CHECK(mapped[0]->size == 4096);
  // the workload's child made a 32-bit call, unless the kernel has no IA-32 emulation
  struct stat st;
  const bool ia32 = ::stat((tmp / "no-ia32").c_str(), &st) != 0;
  INFO("IA-32 emulation " << (ia32 ? "on" : "off: the 32-bit call could not be made"));
  CHECK(bool(bits & incomplete_compat_syscalls) == ia32);
  CHECK(t.reader.complete() == !ia32);
  CHECK(t.all(op::io_uring_setup).size() == 1);
}

TEST_CASE("record exits with the command's status", "[recorder]") {
  REQUIRE_RECORDING();
  test::temp_dir tmp;
  recorder::record_options o;
  o.output = tmp / "status.trace";
  o.command = {"sh", "-c", "exit 3"};
  CHECK(test::record(o).exit_status == 3);
  o.command = {"sh", "-c", "kill -9 $$"};
  CHECK(test::record(o).exit_status == 128 + 9);
}
