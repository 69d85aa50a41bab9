#include "rank_link.h"

#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <map>

#include <fmt/format.h>

#include "clock.h"

namespace fsrr::mpi {
namespace {

enum tag : int {
  progress_tag = 1,
  stop_tag = 2,
  done_tag = 3,
  // start_instant's clock ping-pong and the offsets it finds
  ping_tag = 10,
  pong_tag = 11,
  offset_tag = 12,
};
// (thread, count) pairs in one message: 4 KiB, sent eagerly by every transport.
constexpr size_t words_per_message = 512;
constexpr size_t receive_bytes = 64 * 1024;

}  // namespace

rank_link::rank_link(MPI_Comm comm, int rank, const rank_plan& plan, size_t threads)
    : comm_(comm),
      rank_(rank),
      size_(plan.ranks()),
      plan_(plan),
      remote_(new progress_counter[threads + 1]),
      threads_(threads + 1) {
  for (size_t t = 0; t < threads_; ++t) remote_[t].remote = true;
}

rank_link::~rank_link() {
  if (thread_.joinable()) end();
}

// Each rank's CLOCK_MONOTONIC minus rank 0's, from the ping-pong round with the shortest
// round trip (its error is at most half that trip), then a start instant on rank 0's clock a
// little ahead, translated to each rank's. Collective; before begin(), while no other thread
// of this rank uses the communicator.
uint64_t rank_link::start_instant() {
  constexpr int rounds = 16;
  constexpr uint64_t ahead_ns = 50'000'000;  // the last rank learns it well before it is due
  offset_ = 0;
  if (rank_ == 0) {
    for (int r = 1; r < size_; ++r) {
      uint64_t best_rtt = UINT64_MAX;
      int64_t best = 0;
      for (int i = 0; i < rounds; ++i) {
        const uint64_t t0 = monotonic_ns();
        uint64_t theirs = 0;
        MPI_Send(&t0, 1, MPI_UINT64_T, r, ping_tag, comm_);
        MPI_Recv(&theirs, 1, MPI_UINT64_T, r, pong_tag, comm_, MPI_STATUS_IGNORE);
        const uint64_t t1 = monotonic_ns();
        if (t1 - t0 < best_rtt) {
          best_rtt = t1 - t0;
          best = static_cast<int64_t>(theirs) - static_cast<int64_t>(t0 + (t1 - t0) / 2);
        }
      }
      MPI_Send(&best, 1, MPI_INT64_T, r, offset_tag, comm_);
    }
  } else {
    for (int i = 0; i < rounds; ++i) {
      uint64_t t0 = 0;
      MPI_Recv(&t0, 1, MPI_UINT64_T, 0, ping_tag, comm_, MPI_STATUS_IGNORE);
      const uint64_t now = monotonic_ns();
      MPI_Send(&now, 1, MPI_UINT64_T, 0, pong_tag, comm_);
    }
    MPI_Recv(&offset_, 1, MPI_INT64_T, 0, offset_tag, comm_, MPI_STATUS_IGNORE);
  }
  uint64_t start = rank_ == 0 ? monotonic_ns() + ahead_ns : 0;
  MPI_Bcast(&start, 1, MPI_UINT64_T, 0, comm_);
  return static_cast<uint64_t>(static_cast<int64_t>(start) + offset_);
}

void rank_link::finished(thread_id t, uint32_t count, uint64_t watchers) {
  {
    std::lock_guard lock(mu_);
    outbox_.push_back({t, count, watchers});
  }
  wake();
}

void rank_link::wake() {
  bell_.fetch_add(1, std::memory_order_seq_cst);
  if (sleeping_.load(std::memory_order_seq_cst))
    ::syscall(SYS_futex, &bell_, FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr, 0);
}

void rank_link::sleep(uint64_t ns) {
  const uint32_t seen = bell_.load(std::memory_order_seq_cst);
  sleeping_.store(true, std::memory_order_seq_cst);
  bool pending;
  {
    std::lock_guard lock(mu_);
    pending = !outbox_.empty();
  }
  if (!pending && !local_done_.load()) {
    const timespec ts{0, static_cast<long>(ns)};
    ::syscall(SYS_futex, &bell_, FUTEX_WAIT_PRIVATE, seen, &ts, nullptr, 0);
  }
  sleeping_.store(false, std::memory_order_relaxed);
}

void rank_link::begin(replay_shared& shared) {
  shared_ = &shared;
  thread_ = std::thread(&rank_link::run, this);
}

void rank_link::end() {
  local_done_.store(true);
  wake();
  if (thread_.joinable()) thread_.join();
}

bool rank_link::send(int to, int tag, const void* data, size_t bytes) {
  const int rc = MPI_Send(data, static_cast<int>(bytes), MPI_BYTE, to, tag, comm_);
  ++sent_;
  if (rc == MPI_SUCCESS) return true;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  if (failure_.empty())
    failure_ = fmt::format("sending to rank {}: {}", to, std::string(text, len));
  if (shared_) shared_->request_stop(failure_);
  return false;
}

// The latest count of each lane, once to each rank that waits on it.
void rank_link::send_progress(std::vector<word>& words) {
  std::map<int, std::map<thread_id, uint32_t>> to;
  for (const word& w : words)
    for (int r = 0; r < size_; ++r) {
      if (r == rank_ || !(w.watchers & (uint64_t{1} << (r % 64)))) continue;
      uint32_t& c = to[r][w.t];
      if (static_cast<int32_t>(w.count - c) > 0 || c == 0) c = w.count;
    }
  std::vector<uint32_t> pairs;
  for (const auto& [r, lanes] : to) {
    pairs.clear();
    for (const auto& [t, c] : lanes) {
      pairs.push_back(t);
      pairs.push_back(c);
      if (pairs.size() == 2 * words_per_message) {
        send(r, progress_tag, pairs.data(), pairs.size() * 4);
        pairs.clear();
      }
    }
    if (!pairs.empty()) send(r, progress_tag, pairs.data(), pairs.size() * 4);
  }
  words.clear();
}

void rank_link::received(const MPI_Status& st, const std::vector<uint8_t>& buf) {
  int bytes = 0;
  MPI_Get_count(&st, MPI_BYTE, &bytes);
  const auto n = static_cast<size_t>(std::max(bytes, 0));
  switch (st.MPI_TAG) {
    case progress_tag:
      for (size_t i = 0; i + 8 <= n; i += 8) {
        uint32_t t, count;
        std::memcpy(&t, buf.data() + i, 4);
        std::memcpy(&count, buf.data() + i + 4, 4);
        if (t == 0 || t >= threads_) continue;
        progress_counter& c = remote_[t];
        const auto ahead = static_cast<int32_t>(count - c.value.load(std::memory_order_relaxed));
        if (ahead > 0) c.advance(static_cast<uint32_t>(ahead));
      }
      return;
    case stop_tag:
      if (!told_to_stop_ && own_stop_.empty()) {
        told_to_stop_ = true;
        const std::string why(reinterpret_cast<const char*>(buf.data()), n);
        if (shared_) shared_->request_stop(fmt::format("rank {}: {}", st.MPI_SOURCE, why));
      }
      return;
    case done_tag:
      ++done_peers_;
      return;
  }
}

void rank_link::run() {
  std::vector<uint8_t> buf(receive_bytes);
  MPI_Request rq;
  MPI_Irecv(buf.data(), static_cast<int>(buf.size()), MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG, comm_,
            &rq);
  std::vector<word> words;
  bool sent_done = false, stop_passed = false;
  unsigned quiet = 0;
  for (;;) {
    bool busy = false;
    const bool done = local_done_.load();
    {
      std::lock_guard lock(mu_);
      words.swap(outbox_);
    }
    if (!words.empty()) {
      send_progress(words);
      busy = true;
    }
    // A stop here (strict, ENOSPC, a signal) the others learn at once: their ops may wait for
    // ops of this rank that will never be issued now.
    if (!stop_passed && shared_ && shared_->stop.load() && !told_to_stop_) {
      stop_passed = true;
      own_stop_ = shared_->stop_reason();
      for (int r = 0; r < size_; ++r)
        if (r != rank_) send(r, stop_tag, own_stop_.data(), own_stop_.size());
    }
    // Done goes after every word of progress: MPI keeps one sender's messages in order.
    if (done && !sent_done) {
      sent_done = true;
      for (int r = 0; r < size_; ++r)
        if (r != rank_) send(r, done_tag, nullptr, 0);
    }
    for (;;) {
      int flag = 0;
      MPI_Status st;
      if (MPI_Test(&rq, &flag, &st) != MPI_SUCCESS) {
        if (failure_.empty()) failure_ = "receiving from the other ranks failed";
        if (shared_) shared_->request_stop(failure_);
        return;
      }
      if (!flag) break;
      received(st, buf);
      busy = true;
      MPI_Irecv(buf.data(), static_cast<int>(buf.size()), MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG,
                comm_, &rq);
    }
    if (sent_done && done_peers_ == size_ - 1) break;
    // Polled: MPI has no wake-up to sleep on. While a replay thread here waits for another
    // rank's op, and for a while after any message, the thread only yields; otherwise it sleeps
    // longer and longer, up to a millisecond (a word to send wakes it at once).
    quiet = busy ? 0 : quiet + 1;
    if (quiet < 200 || (shared_ && shared_->remote_waiters.load(std::memory_order_relaxed)))
      ::sched_yield();
    else
      sleep(std::min<uint64_t>(1'000'000, 10'000ull << std::min(quiet - 200, 7u)));
  }
  MPI_Cancel(&rq);
  MPI_Wait(&rq, MPI_STATUS_IGNORE);
}

}  // namespace fsrr::mpi
