// The engine's side of a replay shared by several processes (replayer/peers.h), without MPI:
// two engines in one process, each issuing its own rank's threads, their progress handed over
// directly. What MPI carries in the real thing is only these counts.
#include <fcntl.h>

#include <memory>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "rank_plan.h"
#include "replay_fixture.h"
#include "trace_builder.h"

using namespace fsrr;

namespace {

class in_process_peers final : public replay_peers {
 public:
  in_process_peers(int rank, const mpi::rank_plan& plan, size_t threads)
      : rank_(rank), plan_(plan), remote_(new progress_counter[threads + 1]) {
    for (size_t t = 0; t <= threads; ++t) remote_[t].remote = true;
  }
  void connect(std::vector<in_process_peers*> all) { all_ = std::move(all); }
  bool issues(thread_id t) const override { return plan_.rank_of(t) == rank_; }
  progress_counter& remote_progress(thread_id t) override { return remote_[t]; }
  uint64_t watchers(std::span<const uint64_t> keys) const override {
    return plan_.watchers(keys, rank_);
  }
  bool touched_here(uint64_t key) const override { return plan_.touched_by(key, rank_); }
  void finished(thread_id t, uint32_t count, uint64_t watchers) override {
    ++words;
    for (in_process_peers* p : all_) {
      if (p == this || !(watchers & (uint64_t{1} << p->rank_))) continue;
      progress_counter& c = p->remote_[t];
      const auto ahead = static_cast<int32_t>(count - c.value.load());
      if (ahead > 0) c.advance(static_cast<uint32_t>(ahead));
    }
  }
  uint64_t start_instant() override { return monotonic_ns(); }  // at once
  void begin(replay_shared&) override {}
  void end() override {}
  std::atomic<uint64_t> words{0};

 private:
  int rank_;
  const mpi::rank_plan& plan_;
  std::unique_ptr<progress_counter[]> remote_;
  std::vector<in_process_peers*> all_;
};

}  // namespace

TEST_CASE(
    "two engines sharing a trace keep the order across them, a rename waiting for the "
    "create on the other, and together replay what one engine does") {
  test::replay_fixture f;
  {
    test::trace_builder b(f.trace);
    b.tree_dir("/d");
    const thread_id maker = b.thread(10, 10, 1), mover = b.thread(20, 20, 2);
    // The maker is busy with its own file first: an engine that did not wait would rename
    // before the create.
    event& o = b.next(maker, op::openat, 3);
    o.path = b.path("/d/own");
    o.flags = O_WRONLY | O_CREAT;
    o.mode = 0644;
    for (int i = 0; i < 2000; ++i) {
      event& w = b.next(maker, op::write, 4096);
      w.fd = 3;
      w.size = 4096;
    }
    b.next(maker, op::close).fd = 3;
    event& c = b.next(maker, op::openat, 4);
    c.path = b.path("/d/made");
    c.flags = O_WRONLY | O_CREAT;
    c.mode = 0644;
    event& w = b.next(maker, op::write, 5);
    w.fd = 4;
    w.size = 5;
    b.next(maker, op::close).fd = 4;
    event& mv = b.next(mover, op::rename);
    mv.path = b.path("/d/made");
    mv.path2 = b.path("/d/moved");
    event& s = b.next(mover, op::stat);
    s.path = b.path("/d/moved");
    b.finish();
  }
  trace_reader plan_reader = or_throw(trace_reader::open(f.trace));
  const mpi::rank_plan plan = or_throw(mpi::rank_plan::make(plan_reader, 2));
  REQUIRE(plan.rank_of(1) != plan.rank_of(2));
  const size_t threads = plan_reader.thread_count();
  in_process_peers p0(0, plan, threads), p1(1, plan, threads);
  p0.connect({&p0, &p1});
  p1.connect({&p0, &p1});

  {
    trace_reader r = or_throw(trace_reader::open(f.trace));
    target_root t = or_throw(target_root::open(f.target));
    data_source d({});
    or_throw(prepare_tree(r, t, d, {}));
  }
  replay_stats s0, s1;
  auto run = [&](in_process_peers& p, replay_stats& out) {
    trace_reader r = or_throw(trace_reader::open(f.trace));
    target_root t = or_throw(target_root::open(f.target));
    data_source d({});
    engine_options o = test::afap();
    o.peers = &p;
    out = replay_events(r, t, d, o);
  };
  std::thread a([&] { run(p0, s0); });
  std::thread b([&] { run(p1, s1); });
  a.join();
  b.join();

  const replay_stats& maker = plan.rank_of(1) == 0 ? s0 : s1;
  const replay_stats& mover = plan.rank_of(1) == 0 ? s1 : s0;
  CHECK(s0.mismatches == 0);
  CHECK(s1.mismatches == 0);
  CHECK(maker.events == 2005);
  CHECK(mover.events == 2);
  CHECK(test::count(mover, op::rename) == 1);
  CHECK(test::count(maker, op::rename) == 0);
  // The rename waits for the close of the new file when the maker is still writing as the
  // mover gets there; its engine first settles the maker's 2,005 ops, and under ASan on two
  // busy CPUs the maker was once done by then (0 waits). The order itself is what the files
  // below show: moved, with the 5 bytes written before the close.
  CHECK(mover.remote_waits <= 1);
  CHECK(maker.remote_waits == 0);
  CHECK(f.exists("d/moved"));
  CHECK_FALSE(f.exists("d/made"));
  CHECK(f.size("d/moved") == 5);
  CHECK(f.size("d/own") == 2000 * 4096);
  CHECK((plan.rank_of(1) == 0 ? p0 : p1).words > 0);  // the maker told the mover
  CHECK(s0.threads + s1.threads == 2);
}
