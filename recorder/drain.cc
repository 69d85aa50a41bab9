#include "drain.h"

#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "clock.h"

namespace fsrr::recorder {
namespace {

constexpr int wait_ms = 10;  // the ring is looked at this often even if nobody wakes us

}  // namespace

result<std::unique_ptr<drain>> drain::open(int ring_fd, uint64_t ring_size, uint64_t budget,
                                           std::function<void(uint64_t)> after_pass,
                                           bool idle_decoder) {
  auto ring = ring_reader::map(ring_fd, ring_size);
  if (!ring) return tl::unexpected(ring.error());
  std::unique_ptr<drain> d(
      new drain(std::move(*ring), ring_fd, budget, std::move(after_pass), idle_decoder));
  FSRR_TRY(d->open_fds());  // d's destructor closes those it opened
  return d;
}

drain::drain(ring_reader ring, int ring_fd, uint64_t budget,
             std::function<void(uint64_t)> after_pass, bool idle_decoder)
    : ring_(std::move(ring)),
      slab_bytes_(std::clamp<uint64_t>(budget / 4, 64u << 10, 4u << 20)),
      budget_(std::max<uint64_t>(budget, 2 * slab_bytes_)),
      after_pass_(std::move(after_pass)),
      ring_fd_(ring_fd),
      decoder_(idle_decoder) {}

result<void> drain::open_fds() {
  const auto failed = [](const char* what) {
    return failure("{}: {}", what, std::strerror(errno));
  };
  if ((epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC)) < 0) return failed("epoll_create1");
  if ((wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0) return failed("eventfd");
  if ((ready_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0) return failed("eventfd");
  if ((watch_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0) return failed("eventfd");
  for (int fd : {ring_fd_, wake_fd_}) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    if (::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev) != 0) return failed("epoll_ctl");
  }
  return {};
}

drain::~drain() {
  if (thread_.joinable()) stop();
  for (int fd : {epoll_fd_, wake_fd_, ready_fd_, watch_fd_})
    if (fd >= 0) ::close(fd);
}

void drain::start() {
  thread_ = std::thread([this] { run(); });
  if (decoder_.on()) watch_ = std::thread([this] { watch(); });
}

// The idle decoder's watchdog: a thread that takes no lock and allocates nothing, so that
// whatever the decoder holds while it waits for a CPU (the queue's mutex, the allocator's,
// a lock in the kernel), the watchdog can still raise it: when it misses its beat, or when
// the drain found it behind.
void drain::watch() {
  for (;;) {
    pollfd stop{watch_fd_, POLLIN, 0};
    if (::poll(&stop, 1, wait_ms) != 0) return;
    if (!decoder_.idle()) continue;
    if (behind_.load(std::memory_order_relaxed) ||
        monotonic_ns() - decoder_.last_beat() > idle_decoder_max_lag_ns)
      decoder_.raise();
  }
}

void drain::stop(const sink_fn& sink) {
  if (!thread_.joinable()) return;
  if (watch_.joinable()) {
    const uint64_t one = 1;
    (void)!::write(watch_fd_, &one, sizeof one);
    watch_.join();
  }
  taken_at_stop_.store(static_cast<bool>(sink));
  stopping_.store(true);
  const uint64_t one = 1;
  (void)!::write(wake_fd_, &one, sizeof one);
  room_.notify_all();
  while (sink && !finished_.load()) {
    take(sink);
    pollfd ready{ready_fd_, POLLIN, 0};
    ::poll(&ready, 1, wait_ms);
  }
  thread_.join();
  if (sink) take(sink);
}

void drain::run() {
  bool cut = false;
  for (;;) {
    if (cut) {  // the decoder is behind: wait for it, not for the ring (which is not empty)
      decoder_.raise();
      std::unique_lock lock(mu_);
      room_.wait_for(lock, std::chrono::milliseconds(wait_ms),
                     [this] { return has_room() || stopping_.load(); });
    } else {
      epoll_event evs[2];
      ::epoll_wait(epoll_fd_, evs, 2, wait_ms);
    }
    const bool last = stopping_.load();  // read before the pass: nothing is sent after it
    const uint64_t before = stats().full;
    pass();
    cut = stats().full != before;
    if (after_pass_) after_pass_(ring_.pending());
    note_lag();
    if (last) {
      last_passes();
      finished_.store(true);
      const uint64_t one = 1;  // stop() may be waiting for records, or for this
      (void)!::write(ready_fd_, &one, sizeof one);
      return;
    }
  }
}

// Until the ring is empty; with a sink at stop(), waiting for room as the decoder makes it.
void drain::last_passes() {
  for (;;) {
    const uint64_t full = stats().full;
    const size_t n = pass();
    if (stats().full == full) {
      if (n == 0) return;
      continue;
    }
    std::unique_lock lock(mu_);
    room_.wait_for(lock, std::chrono::milliseconds(wait_ms), [this] { return has_room(); });
  }
}

void drain::decoder_beat() {
  decoder_.beat(monotonic_ns());
  if (!decoder_.idle() && !stopping_.load() && !behind_.load(std::memory_order_relaxed))
    decoder_.enter();
}

void drain::decoder_awake() {
  decoder_.leave();
}

// How long the oldest record not yet decoded has waited: in the decoder's hands, in the queue,
// or in the slab being filled. An idle decoder that far behind is raised (here, or by the
// watchdog if this thread is held up).
void drain::note_lag() {
  uint64_t oldest = filling_.used ? filling_.since : UINT64_MAX;
  {
    std::lock_guard lock(mu_);
    if (!ready_.empty()) oldest = std::min(oldest, ready_.front().since);
  }
  if (const uint64_t h = in_hand_since_.load(std::memory_order_relaxed))
    oldest = std::min(oldest, h);
  const uint64_t now = monotonic_ns();
  const bool behind = oldest != UINT64_MAX && now - oldest > idle_decoder_max_lag_ns;
  behind_.store(behind, std::memory_order_relaxed);
  if (behind) decoder_.raise();
}

size_t drain::pass() {
  const uint64_t n = ring_.consume([this](std::span<const uint8_t> r) { return keep(r); });
  // A slab not yet full joins the queue only when the decoder has nothing else to do (or at
  // the end): were it handed over after every pass, the queue would hold many slabs with a
  // few records each, and memory would be slabs, not the records the budget counts.
  bool idle;
  {
    std::lock_guard lock(mu_);
    idle = ready_.empty();
    stats_.wrapped = ring_.wrapped();
  }
  if (idle || stopping_.load()) publish();
  return n;
}

bool drain::keep(std::span<const uint8_t> record) {
  const size_t need = 8 + ((record.size() + 7) & ~size_t{7});
  if (need > slab_bytes_) return true;  // cannot be one of ours: dropped
  if (filling_.words && filling_.used + need > slab_bytes_) publish();
  if (!filling_.words) {
    std::lock_guard lock(mu_);
    if (!(stopping_.load() && !taken_at_stop_.load()) && !has_room()) {
      ++stats_.full;
      return false;
    }
    if (!spare_.empty()) {
      filling_ = std::move(spare_.back());
      spare_.pop_back();
    } else {
      filling_.words = std::make_unique_for_overwrite<uint64_t[]>(slab_bytes_ / 8);
    }
    filling_.used = 0;
    filling_.records = 0;
    filling_.since = monotonic_ns();
  }
  auto* at = reinterpret_cast<uint8_t*>(filling_.words.get()) + filling_.used;
  const uint64_t len = record.size();
  std::memcpy(at, &len, 8);
  std::memcpy(at + 8, record.data(), record.size());
  filling_.used += need;
  ++filling_.records;
  return true;
}

void drain::publish() {
  if (!filling_.words || filling_.used == 0) return;
  {
    std::lock_guard lock(mu_);
    queued_ += filling_.used;
    stats_.bytes += filling_.used;
    stats_.records += filling_.records;
    stats_.peak_queued = std::max(stats_.peak_queued, queued_);
    stats_.peak_memory = std::max<uint64_t>(stats_.peak_memory, (ready_.size() + 1) * slab_bytes_);
    ready_.push_back(std::move(filling_));
  }
  filling_ = {};
  const uint64_t one = 1;
  (void)!::write(ready_fd_, &one, sizeof one);
}

size_t drain::take(const sink_fn& sink) {
  uint64_t count;
  (void)!::read(ready_fd_, &count, sizeof count);  // reset before looking: no wakeup is lost
  std::deque<slab> batch;
  {
    std::lock_guard lock(mu_);
    batch.swap(ready_);
    if (!batch.empty()) in_hand_since_.store(batch.front().since, std::memory_order_relaxed);
  }
  size_t records = 0;
  for (size_t i = 0; i < batch.size(); ++i) {
    slab& s = batch[i];
    const auto* bytes = reinterpret_cast<const uint8_t*>(s.words.get());
    for (size_t at = 0; at < s.used;) {
      uint64_t len;
      std::memcpy(&len, bytes + at, 8);
      sink({bytes + at + 8, static_cast<size_t>(len)});
      at += 8 + ((len + 7) & ~uint64_t{7});
      ++records;
    }
    {
      std::lock_guard lock(mu_);
      in_hand_since_.store(i + 1 < batch.size() ? batch[i + 1].since : 0,
                           std::memory_order_relaxed);
      queued_ -= s.used;
      if (spare_.size() < 4) spare_.push_back(std::move(s));  // warm slabs: no page faults
    }
    room_.notify_one();  // not under the lock: the drain, woken, would wait for it
  }
  return records;
}

drain_stats drain::stats() const {
  std::lock_guard lock(mu_);
  drain_stats s = stats_;
  s.decoder_idled = decoder_.entered();
  s.decoder_raised = decoder_.raised();
  return s;
}

}  // namespace fsrr::recorder
