#include "engine_requests.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <liburing.h>
#include <linux/aio_abi.h>
#include <sys/uio.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <tuple>
#include <utility>

#include "work_item.h"
#include "schedule.h"

namespace fsrr {
namespace {

constexpr unsigned ring_entries = 256;      // per ring; its CQ holds twice as many
constexpr size_t max_slots = ring_entries;  // in flight at once, all queues: never a CQ overflow
constexpr unsigned registered_files = 256;  // a ring's sparse table of fixed files
constexpr uint8_t uring_ftruncate = 55;     // IORING_OP_FTRUNCATE (6.9); liburing 2.3 has no prep

long io_setup(unsigned nr, aio_context_t* ctx) { return ::syscall(SYS_io_setup, nr, ctx); }
long io_destroy(aio_context_t ctx) { return ::syscall(SYS_io_destroy, ctx); }
long io_submit(aio_context_t ctx, long n, iocb** cbs) {
  return ::syscall(SYS_io_submit, ctx, n, cbs);
}
long io_getevents(aio_context_t ctx, long min, long max, io_event* ev) {
  return ::syscall(SYS_io_getevents, ctx, min, max, ev, nullptr);
}

// Splits [buf, buf+n) into `count` iovecs, as op_dispatch does for the syscalls.
void split(uint8_t* buf, size_t n, uint64_t count, std::vector<iovec>& iov) {
  const size_t cnt = std::clamp<uint64_t>(count, 1, IOV_MAX);
  const size_t each = n / cnt;
  iov.resize(cnt);
  for (size_t i = 0; i < cnt; ++i)
    iov[i] = {buf + i * each, i + 1 == cnt ? n - each * (cnt - 1) : each};
}

// The bytes a request reads or writes, as far as ordering goes ([from, to)): the whole file
// for an op at the file's position, an op on the whole file (fsync, truncate, fallocate...)
// and a write that appends; from its offset on for a read that met the file's end or whose
// length the trace does not keep (a vectored one's): a write past the end changes what it
// reads.
std::pair<uint64_t, uint64_t> bytes_of(const event& e, bool append) {
  constexpr uint64_t all = UINT64_MAX;
  const bool read = e.kind == op::pread64 || e.kind == op::preadv;
  const bool positioned = read || e.kind == op::pwrite64 || e.kind == op::pwritev;
  if (!positioned || e.offset < 0 || (append && !read)) return {0, all};
  const auto from = static_cast<uint64_t>(e.offset);
  if (read && (e.kind == op::preadv || e.result < 0 || static_cast<uint64_t>(e.result) < e.size))
    return {from, all};
  return {from, e.size > all - from ? all : from + e.size};
}

}  // namespace

struct engine_requests::request {
  work_item w;
  uint64_t start_tick = 0;
  uint64_t recorded_done = 0;  // the recorded completion, trace ns
  uint64_t ordinal = 0;
  size_t at = 0;  // in in_flight_
  engine en = engine::syscall;
  uint32_t queue = 0;
  bool busy = false;
  size_t index = 0;  // in slots_: the request's user_data
  int fd = -1;       // the replay fd it works on
  uint64_t from = 0, to = UINT64_MAX;  // the bytes it reads or writes; all: the whole file
  ring* g = nullptr;
  context* c = nullptr;
  uint8_t* buf = nullptr;  // a write's bytes, page-aligned (O_DIRECT)
  size_t cap = 0;
  uint64_t buf_gen = 0;  // counts buf's mappings: a ring's registration of an older one is stale
  std::vector<iovec> iov;
  iocb cb{};
  ~request() {
    if (buf) ::munmap(buf, cap);
  }
  bool room(size_t n) {
    if (n <= cap) return true;
    if (buf) ::munmap(buf, cap);
    ++buf_gen;
    cap = std::max<size_t>((n + 0xFFFF) & ~size_t{0xFFFF}, 0x10000);
    void* p = ::mmap(nullptr, cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    buf = p == MAP_FAILED ? nullptr : static_cast<uint8_t*>(p);
    if (!buf) cap = 0;
    return buf != nullptr;
  }
};

struct engine_requests::ring {
  io_uring u{};
  bool live = false;       // set up: its fd is the ring's (else 0, which must stay open)
  unsigned busy = 0;       // its requests in flight
  bool ftruncate = false;  // the kernel has IORING_OP_FTRUNCATE (6.9)
  unsigned queued = 0;     // SQEs not yet submitted
  std::deque<request*> pending;  // their requests, in queue order
  bool link_open = false;  // the last one queued links to the next
  bool files = false;      // a sparse table of fixed files is registered
  struct slot {
    int fd = -1;  // replay fd registered in it, -1: free
    dev_t dev = 0;
    ino_t ino = 0;  // what the fd was then: a number reused for another file is not it
  };
  std::vector<slot> fixed;
  // Registered buffers (READ_FIXED, WRITE_FIXED as recorded): a sparse table, slot i the
  // buffer of request i, the last one the reads' sink; what each holds.
  int buffers = 0;  // 0: not tried, 1: a table, -1: refused (no sparse tables, or pinning)
  struct held {
    const void* base = nullptr;
    size_t len = 0;
    uint64_t gen = 0;
  };
  std::vector<held> held_buffers;
  ~ring() {
    if (live) io_uring_queue_exit(&u);
  }
};

struct engine_requests::context {
  aio_context_t id = 0;
  unsigned busy = 0;  // its requests in flight
  std::vector<iocb*> queued;
  ~context() {
    if (id) io_destroy(id);
  }
};

engine_requests::engine_requests(std::array<engine_stats, 4>& stats, done_fn done)
    : stats_(stats), done_(std::move(done)) {}

engine_requests::~engine_requests() { drain(); }

engine_requests::request* engine_requests::take_slot() {
  if (free_.empty() && slots_.size() < max_slots) {
    auto r = std::make_unique<request>();
    r->index = slots_.size();
    free_.push_back(r.get());
    slots_.push_back(std::move(r));
  }
  if (free_.empty()) {  // as many in flight as the rings hold: the oldest goes first
    request* oldest = nullptr;
    for (request* s : in_flight_)
      if (!oldest || s->ordinal < oldest->ordinal) oldest = s;
    if (oldest) reap(*oldest);
  }
  if (free_.empty()) return nullptr;
  request* r = free_.back();
  free_.pop_back();
  return r;
}

engine_requests::ring* engine_requests::ring_of(uint32_t queue, bool sqpoll) {
  auto& g = rings_[queue];
  if (g) return g.get();
  if (no_uring_) return nullptr;
  auto made = std::make_unique<ring>();
  int rc = -1;
  if (sqpoll) {  // polled by a kernel thread of its own, as recorded
    io_uring_params p{};
    p.flags = IORING_SETUP_SQPOLL;
    p.sq_thread_idle = 1000;
    rc = io_uring_queue_init_params(ring_entries, &made->u, &p);
  }
  if (rc < 0) {
    // One thread submits and reaps, and completions run when it asks for them: no wake-up of
    // it per completion (as fio sets up its rings).
    io_uring_params p{};
    p.flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN;
    rc = io_uring_queue_init_params(ring_entries, &made->u, &p);
  }
  if (rc < 0) rc = io_uring_queue_init(ring_entries, &made->u, 0);
  if (rc < 0) {
    no_uring_ = true;
    rings_.erase(queue);
    return nullptr;
  }
  made->live = true;
  if (io_uring_probe* p = io_uring_get_probe_ring(&made->u)) {
    made->ftruncate = io_uring_opcode_supported(p, uring_ftruncate);
    io_uring_free_probe(p);
  }
  g = std::move(made);
  return g.get();
}

engine_requests::context* engine_requests::context_of(uint32_t queue) {
  auto& c = contexts_[queue];
  if (c) return c.get();
  if (no_aio_) return nullptr;
  auto made = std::make_unique<context>();
  if (io_setup(max_slots, &made->id) < 0) {
    no_aio_ = true;
    contexts_.erase(queue);
    return nullptr;
  }
  c = std::move(made);
  return c.get();
}

uint64_t engine_requests::recorded_depth(engine en, uint32_t queue, uint64_t ts) {
  auto& heap = recorded_[{static_cast<int>(en), queue}];
  while (!heap.empty() && heap.top() <= ts) heap.pop();
  return heap.size() + 1;
}

void engine_requests::note_depth(engine en, uint32_t queue, uint64_t ts, uint64_t done) {
  engine_stats& s = stats_[static_cast<size_t>(en)];
  ++s.requests;
  const uint64_t depth = busy_by_engine_[static_cast<size_t>(en)];
  s.in_flight_sum += depth;
  s.max_in_flight = std::max(s.max_in_flight, depth);
  recorded_depth(en, queue, ts);
  auto& heap = recorded_[{static_cast<int>(en), queue}];
  heap.push(done);
  s.recorded_in_flight_sum += heap.size();
  s.recorded_max_in_flight = std::max<uint64_t>(s.recorded_max_in_flight, heap.size());
}

bool engine_requests::submit(const work_item& w, int fd, std::span<const uint8_t> data,
                             std::span<uint8_t> sink, uint64_t ordinal, bool append) {
  const event& e = w.ev;
  const engine en = engine_of(e.via);
  if ((en == engine::io_uring && no_uring_) || (en == engine::aio && no_aio_)) return false;
  request* r = take_slot();
  if (!r) return false;
  r->w = w;
  r->en = en;
  r->queue = queue_of(e.via);
  r->recorded_done = e.ts + e.dur;
  r->ordinal = ordinal;
  r->g = nullptr;
  r->c = nullptr;
  r->fd = fd;
  std::tie(r->from, r->to) = bytes_of(e, append);
  if (!data.empty()) {
    if (data.size() > r->cap && r->buf) release_buffer(*r);
    if (!r->room(data.size())) {
      free_.push_back(r);
      return false;
    }
    std::memcpy(r->buf, data.data(), data.size());
  }
  const std::span<uint8_t> bytes =
      data.empty() ? sink.first(std::min(sink.size(), static_cast<size_t>(e.size)))
                   : std::span<uint8_t>(r->buf, data.size());
  if (info(e.kind).cls == op_class::read || info(e.kind).cls == op_class::write)
    split(bytes.data(), bytes.size(), e.aux, r->iov);
  const bool ok = en == engine::io_uring ? submit_uring(*r, fd) : submit_aio(*r, fd);
  if (!ok) {
    free_.push_back(r);
    return false;
  }
  r->busy = true;
  if (r->g) ++r->g->busy;
  if (r->c) ++r->c->busy;
  ++busy_;
  ++busy_by_engine_[static_cast<size_t>(en)];
  r->at = in_flight_.size();
  in_flight_.push_back(r);
  note_depth(en, r->queue, e.ts, r->recorded_done);
  r->start_tick = latency_clock::get().now();
  return true;
}

// The index of the registered buffer of ring g that holds request r's bytes: its own slot
// for a write (its buffer, registered again when it was mapped anew), the last slot for a read
// (the sink all reads share, registered again when a read needs more of it). -1 for no bytes
// (a 0-byte request), and for good where the kernel refuses to register them (no sparse
// tables before 5.19, an ordinary user's RLIMIT_MEMLOCK when pinning): plain buffers then.
int engine_requests::registered_buffer(ring& g, request& r, bool reads) {
  const iovec& io = r.iov[0];
  const iovec want = reads ? io : iovec{r.buf, r.cap};
  const auto* at = static_cast<const uint8_t*>(io.iov_base);
  const auto* from = static_cast<const uint8_t*>(want.iov_base);
  if (!at || !io.iov_len || !from || at < from || at + io.iov_len > from + want.iov_len)
    return -1;
  if (g.buffers == 0) {
    g.buffers = io_uring_register_buffers_sparse(&g.u, max_slots + 1) == 0 ? 1 : -1;
    if (g.buffers > 0) g.held_buffers.assign(max_slots + 1, ring::held{});
  }
  if (g.buffers < 0) return -1;
  const unsigned slot = reads ? max_slots : static_cast<unsigned>(r.index);
  const uint64_t gen = reads ? 0 : r.buf_gen;
  ring::held& h = g.held_buffers[slot];
  const auto* base = static_cast<const uint8_t*>(h.base);
  const bool inside = base && at >= base && at + io.iov_len <= base + h.len;
  if (!inside || h.gen != gen) {
    if (io_uring_register_buffers_update_tag(&g.u, slot, &want, nullptr, 1) < 0) {
      g.buffers = -1;  // refused: not asked again, every request a syscall otherwise
      return -1;
    }
    h = {want.iov_base, want.iov_len, gen};
  }
  return static_cast<int>(slot);
}

// Request r's buffer is about to be mapped anew: the rings that registered the old one let
// its pages go (they stay pinned while a registration holds them).
void engine_requests::release_buffer(const request& r) {
  const iovec none{nullptr, 0};
  for (auto& [q, g] : rings_) {
    if (g->buffers <= 0 || !g->held_buffers[r.index].base) continue;
    io_uring_register_buffers_update_tag(&g->u, static_cast<unsigned>(r.index), &none, nullptr, 1);
    g->held_buffers[r.index] = {};
  }
}

bool engine_requests::submit_uring(request& r, int fd) {
  const event& e = r.w.ev;
  ring* g = ring_of(r.queue, e.via & via_sqpoll);
  if (!g) return false;
  if (e.kind == op::ftruncate && !g->ftruncate) return false;  // before 6.9: the syscall
  io_uring_sqe* sqe = io_uring_get_sqe(&g->u);
  if (!sqe) {  // the SQ is full: what is queued goes first
    submit_ring(*g);
    sqe = io_uring_get_sqe(&g->u);
    if (!sqe) return false;
  }
  const uint32_t flags = sqe_flags_of(e.via);
  int target = fd;
  bool fixed = false;
  if (flags & sqe_fixed_file) {  // a registered file, as recorded: one of this ring's slots
    if (!g->files && io_uring_register_files_sparse(&g->u, registered_files) == 0) {
      g->files = true;
      g->fixed.assign(registered_files, ring::slot{});
    }
    struct stat st;
    if (g->files && ::fstat(fd, &st) == 0) {
      // Another lane may have closed the fd registered under this number and opened another
      // file with it: a slot is the fd's while it is the same file.
      auto same = [&](const ring::slot& s) {
        return s.fd == fd && s.dev == st.st_dev && s.ino == st.st_ino;
      };
      auto at = std::find_if(g->fixed.begin(), g->fixed.end(), same);
      if (at == g->fixed.end()) {
        at = std::find_if(g->fixed.begin(), g->fixed.end(),
                          [&](const ring::slot& s) { return s.fd == fd || s.fd < 0; });
        if (at != g->fixed.end() &&
            io_uring_register_files_update(&g->u, static_cast<unsigned>(at - g->fixed.begin()),
                                           &fd, 1) == 1)
          *at = {fd, st.st_dev, st.st_ino};
        else
          at = g->fixed.end();
      }
      if (at != g->fixed.end()) {
        target = static_cast<int>(at - g->fixed.begin());
        fixed = true;
      }
    }
  }
  const auto len = static_cast<unsigned>(r.iov.empty() ? 0 : r.iov.size() == 1 ? r.iov[0].iov_len : 0);
  const bool positioned = e.kind != op::read && e.kind != op::write && e.kind != op::readv &&
                          e.kind != op::writev;
  const uint64_t off = positioned ? static_cast<uint64_t>(e.offset) : ~uint64_t{0};
  const bool reads = e.kind == op::read || e.kind == op::pread64;
  const int buffer = (e.via & via_fixed_buffer) && (reads || e.kind == op::write ||
                                                    e.kind == op::pwrite64) && r.iov.size() == 1
                         ? registered_buffer(*g, r, reads)
                         : -1;
  switch (e.kind) {
    case op::read:
    case op::pread64:
      if (buffer >= 0)
        io_uring_prep_read_fixed(sqe, target, r.iov[0].iov_base, len, off, buffer);
      else
        io_uring_prep_read(sqe, target, r.iov[0].iov_base, len, off);
      break;
    case op::write:
    case op::pwrite64:
      if (buffer >= 0)
        io_uring_prep_write_fixed(sqe, target, r.iov[0].iov_base, len, off, buffer);
      else
        io_uring_prep_write(sqe, target, r.iov[0].iov_base, len, off);
      break;
    case op::readv:
    case op::preadv:
      io_uring_prep_readv(sqe, target, r.iov.data(), static_cast<unsigned>(r.iov.size()), off);
      break;
    case op::writev:
    case op::pwritev:
      io_uring_prep_writev(sqe, target, r.iov.data(), static_cast<unsigned>(r.iov.size()), off);
      break;
    case op::fsync:
    case op::fdatasync:
      io_uring_prep_fsync(sqe, target, e.kind == op::fdatasync ? IORING_FSYNC_DATASYNC : 0);
      break;
    case op::sync_file_range:
      io_uring_prep_sync_file_range(sqe, target, static_cast<unsigned>(e.size),
                                    static_cast<uint64_t>(e.offset), static_cast<int>(e.flags));
      break;
    case op::fallocate:
      io_uring_prep_fallocate(sqe, target, static_cast<int>(e.flags), e.offset,
                              static_cast<off_t>(e.size));
      break;
    case op::fadvise64:
      io_uring_prep_fadvise(sqe, target, static_cast<uint64_t>(e.offset),
                            static_cast<off_t>(e.size), static_cast<int>(e.flags));
      break;
    case op::ftruncate:
      io_uring_prep_rw(uring_ftruncate, sqe, target, nullptr, 0, e.size);
      break;
    default:  // no other op is an io_uring request in a trace
      io_uring_prep_nop(sqe);
      break;
  }
  // The recorded links, drain and async; buffer selection needs the program's buffer groups.
  sqe->flags = static_cast<uint8_t>((flags & (sqe_drain | sqe_link | sqe_hardlink | sqe_async)) |
                                    (fixed ? IOSQE_FIXED_FILE : 0));
  io_uring_sqe_set_data64(sqe, r.index);
  if (buffer >= 0) ++stats_[static_cast<size_t>(engine::io_uring)].fixed_buffers;
  r.g = g;
  ++g->queued;
  g->pending.push_back(&r);
  g->link_open = flags & (sqe_link | sqe_hardlink);
  // A kernel thread polls an SQPOLL ring: a request it was handed went at once, as recorded.
  if ((e.via & via_sqpoll) && !g->link_open) submit_ring(*g);
  return true;
}

bool engine_requests::submit_aio(request& r, int fd) {
  const event& e = r.w.ev;
  context* c = context_of(r.queue);
  if (!c) return false;
  iocb& cb = r.cb;
  cb = iocb{};
  cb.aio_data = r.index;
  cb.aio_fildes = static_cast<uint32_t>(fd);
  cb.aio_offset = e.offset;
  switch (e.kind) {
    case op::pread64:
    case op::pwrite64:
      cb.aio_lio_opcode = e.kind == op::pread64 ? IOCB_CMD_PREAD : IOCB_CMD_PWRITE;
      cb.aio_buf = reinterpret_cast<uint64_t>(r.iov[0].iov_base);
      cb.aio_nbytes = r.iov[0].iov_len;
      break;
    case op::preadv:
    case op::pwritev:
      cb.aio_lio_opcode = e.kind == op::preadv ? IOCB_CMD_PREADV : IOCB_CMD_PWRITEV;
      cb.aio_buf = reinterpret_cast<uint64_t>(r.iov.data());
      cb.aio_nbytes = r.iov.size();
      break;
    case op::fsync:
      cb.aio_lio_opcode = IOCB_CMD_FSYNC;
      break;
    case op::fdatasync:
      cb.aio_lio_opcode = IOCB_CMD_FDSYNC;
      break;
    default:
      return false;
  }
  r.c = c;
  c->queued.push_back(&cb);
  return true;
}

// Hands the ring's queued SQEs to the kernel. A submission the kernel refuses fails the
// requests it did not take with its error; a busy ring (its CQ full) is reaped first.
void engine_requests::submit_ring(ring& g) {
  while (g.queued) {
    const int n = io_uring_submit(&g.u);
    ++stats_[static_cast<size_t>(engine::io_uring)].submits;
    // A polled ring's submit only publishes the SQEs (its kernel thread takes them) and
    // returns how many it has not taken yet: 0 when it took them all at once, which a busy
    // machine's timing makes common. Published is submitted.
    if ((g.u.flags & IORING_SETUP_SQPOLL) && n >= 0) {
      g.pending.clear();
      g.queued = 0;
      break;
    }
    if (n > 0) {
      for (int i = 0; i < n && !g.pending.empty(); ++i) g.pending.pop_front();
      g.queued -= std::min<unsigned>(g.queued, static_cast<unsigned>(n));
      continue;
    }
    if ((n == -EBUSY || n == -EAGAIN) && busy_ > g.queued) {
      reap_ring(g, true);
      continue;
    }
    if (n == -EINTR) continue;
    // Refused (or nothing taken): the rest fail with the error. Their SQEs stay in the SQ
    // ring, which is not used again.
    const int64_t err = n < 0 ? n : -EIO;
    std::deque<request*> left;
    left.swap(g.pending);
    g.queued = 0;
    for (request* r : left) finish(*r, err);
    no_uring_ = true;
    break;
  }
  g.link_open = false;
}

void engine_requests::flush() {
  for (auto& [q, g] : rings_)
    if (g->queued) submit_ring(*g);
  for (auto& [q, c] : contexts_) {
    size_t at = 0;
    while (at < c->queued.size()) {
      const long n = io_submit(c->id, static_cast<long>(c->queued.size() - at), c->queued.data() + at);
      ++stats_[static_cast<size_t>(engine::aio)].submits;
      if (n > 0) {
        at += static_cast<size_t>(n);
        continue;
      }
      if (n == -1 && errno == EAGAIN) {  // the context is full: reap, then go on
        reap_context(*c, true);
        continue;
      }
      // Refused as a whole (EBADF, EINVAL): each request fails with the error.
      const int64_t err = n < 0 ? -errno : -EIO;
      for (size_t i = at; i < c->queued.size(); ++i) finish(*slots_[c->queued[i]->aio_data], err);
      break;
    }
    c->queued.clear();
  }
}

void engine_requests::finish(request& r, int64_t res) {
  if (!r.busy) return;
  r.busy = false;
  if (r.g) --r.g->busy;
  if (r.c) --r.c->busy;
  --busy_;
  --busy_by_engine_[static_cast<size_t>(r.en)];
  in_flight_[r.at] = in_flight_.back();
  in_flight_[r.at]->at = r.at;
  in_flight_.pop_back();
  done_(r.w, res, r.start_tick);
  r.w = work_item{};
  free_.push_back(&r);
}

bool engine_requests::reap_ring(ring& g, bool wait) {
  io_uring_cqe* cqe = nullptr;
  if (wait) {
    int rc;
    do rc = io_uring_wait_cqe(&g.u, &cqe);
    while (rc == -EINTR);
    if (rc < 0) return false;
  }
  unsigned head, n = 0;
  io_uring_for_each_cqe(&g.u, head, cqe) {
    const uint64_t i = cqe->user_data;
    const int64_t res = cqe->res;
    ++n;
    if (i < slots_.size()) finish(*slots_[i], res);
  }
  io_uring_cq_advance(&g.u, n);
  return true;
}

bool engine_requests::reap_context(context& c, bool wait) {
  io_event ev[64];
  long n;
  do n = io_getevents(c.id, wait ? 1 : 0, 64, ev);
  while (n < 0 && errno == EINTR);
  for (long i = 0; i < n; ++i)
    if (ev[i].data < slots_.size()) finish(*slots_[ev[i].data], ev[i].res);
  return n >= 0;
}

void engine_requests::reap(request& r) {
  if ((r.g && r.g->queued) || (r.c && !r.c->queued.empty())) flush();
  while (r.busy) {
    const bool ok = r.g ? reap_ring(*r.g, true) : r.c ? reap_context(*r.c, true) : false;
    if (!ok) finish(r, -EIO);  // its completion cannot be had: counted as failed
  }
}

void engine_requests::reap_before(uint64_t ts) {
  if (!busy_) return;
  for (size_t i = 0; i < in_flight_.size();) {
    request& r = *in_flight_[i];
    if (r.recorded_done > ts || (r.g && r.g->link_open)) {  // a chain being queued stays whole
      ++i;
      continue;
    }
    reap(r);  // it leaves in_flight_, others may too, and the order changes: from the start
    i = 0;
  }
  // What has completed meanwhile is counted now, not at the next wait.
  for (auto& [q, g] : rings_) reap_ring(*g, false);
}

void engine_requests::reap_for(const event& e, int fd, bool append) {
  if (!busy_) return;
  // What has completed is counted now: a ring's completions are read without a syscall.
  for (auto& [q, g] : rings_)
    if (g->busy) reap_ring(*g, false);
  const engine en = engine_of(e.via);
  const uint32_t queue = queue_of(e.via);
  // A linked chain goes whole, with no wait for room inside it: it starts where the recorded
  // order allows, so no more are in flight with it than were.
  const auto chain_ring = rings_.find(queue);
  if ((sqe_flags_of(e.via) & (sqe_link | sqe_hardlink)) ||
      (en == engine::io_uring && chain_ring != rings_.end() && chain_ring->second->link_open)) {
    reap_before(e.ts);
    return;
  }
  const auto [from, to] = bytes_of(e, append);
  for (size_t i = 0; i < in_flight_.size();) {
    request& r = *in_flight_[i];
    // the same file: the trace's file (another fd, a dup, reaches it too), else the same fd
    const bool same = e.file != no_id ? r.w.ev.file == e.file : r.fd == fd;
    const bool depends = same && r.from < to && from < r.to && r.recorded_done <= e.ts;
    if (!depends || (r.g && r.g->link_open)) {  // a chain being queued stays whole
      ++i;
      continue;
    }
    reap(r);  // it leaves in_flight_, others may too, and the order changes: from the start
    i = 0;
  }
  uint64_t& deepest = deepest_[{static_cast<int>(en), queue}];
  deepest = std::max(deepest, recorded_depth(en, queue, e.ts));
  for (;;) {
    const auto g = en == engine::io_uring ? rings_.find(queue) : rings_.end();
    const auto c = en == engine::aio ? contexts_.find(queue) : contexts_.end();
    const unsigned busy = g != rings_.end()      ? g->second->busy
                          : c != contexts_.end() ? c->second->busy
                                                 : 0;
    if (busy < deepest) return;
    if (!wait_for_room(en, queue)) return;
  }
}

// Waits for any request of the queue to complete, as a program at its queue depth does.
bool engine_requests::wait_for_room(engine en, uint32_t queue) {
  if (en == engine::io_uring) {
    ring& g = *rings_.at(queue);
    if (g.link_open) return false;  // a chain being queued stays whole
    if (g.queued) submit_ring(g);
    if (!g.busy) return false;
    if (!reap_ring(g, true)) {  // its completions cannot be had: one of its requests fails
      for (request* r : in_flight_)
        if (r->g == &g) {
          finish(*r, -EIO);
          break;
        }
    }
    return true;
  }
  context& c = *contexts_.at(queue);
  if (!c.queued.empty()) flush();
  if (!c.busy) return false;
  if (!reap_context(c, true))
    for (request* r : in_flight_)
      if (r->c == &c) {
        finish(*r, -EIO);
        break;
      }
  return true;
}

void engine_requests::drain() {
  flush();
  while (!in_flight_.empty()) reap(*in_flight_.front());
}

uint64_t engine_requests::oldest() const {
  uint64_t o = none;
  for (const request* s : in_flight_) o = std::min(o, s->ordinal);
  return o;
}

void engine_requests::forget_fd(int fd) {
  for (auto& [q, g] : rings_) {
    if (!g->files) continue;
    for (size_t i = 0; i < g->fixed.size(); ++i)
      if (g->fixed[i].fd == fd) {
        int none_fd = -1;
        io_uring_register_files_update(&g->u, static_cast<unsigned>(i), &none_fd, 1);
        g->fixed[i] = {};
      }
  }
}

}  // namespace fsrr
