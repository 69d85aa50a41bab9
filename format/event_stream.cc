#include <deque>
#include <future>
#include <optional>
#include <system_error>

#include "trace_reader_impl.h"

namespace fsrr {

// The merge: every thread group of a joined block is a cursor, decoded a batch at a time;
// the cursor with the earliest next event goes first. The next block is decompressed ahead
// and joined once the merge reaches its first event, so memory holds only the blocks whose
// time ranges overlap, and only a batch of decoded events per thread. The block after that
// one is loaded (decompressed, verified) by a helper thread meanwhile: a block of a million
// events takes tens of ms, which a replay's dispatcher would otherwise stand still for.
struct trace_reader::event_stream::impl {
  static constexpr size_t batch_events = 4096;

  trace_reader::impl* r;
  size_t next_block = 0;
  uint64_t unknown = 0;
  result<void> status;  // the first damage met; next() returns false from then on

  struct group_state {
    std::optional<codec::group_decoder> dec;
    std::vector<event> batch;
  };
  struct decoded {
    size_t index;              // block number: orders equal timestamps of one thread across blocks
    std::vector<uint8_t> buf;  // the block, which the decoders read
    std::vector<group_state> groups;  // never resized while cursors point into it
    size_t live = 0;                  // cursors not yet exhausted
    uint64_t min_ts = 0;              // its chunk's first time, as it says
  };
  std::deque<std::unique_ptr<decoded>> blocks;  // joined blocks still referenced, oldest first
  std::vector<std::unique_ptr<decoded>> spare;  // finished blocks, buffers kept for reuse
  std::unique_ptr<decoded> ahead;               // decompressed, not yet joined
  const fb::Chunk* ahead_chunk = nullptr;
  uint64_t ahead_min = 0;
  struct loading {
    std::unique_ptr<decoded> d;                  // its buffer, which only the helper touches
    std::future<result<const fb::Block*>> done;  // destroyed first: waits for the helper
  };
  std::optional<loading> next_load;  // block next_block - 1, on its way

  struct cursor {
    const event* at;
    const event* end;
    group_state* g;
    decoded* block;
    // Strict ordering key: (ts, end, thread, block), and a thread's own events in its order.
    // Of two ops that begin at one time, one that takes no time (an fd_bind, or an op shorter
    // than the trace's time unit) comes first: it ended before the other began.
    bool before(const cursor& o) const {
      if (at->ts != o.at->ts) return at->ts < o.at->ts;
      if (at->thread == o.at->thread) return block->index < o.block->index;
      if (at->dur != o.at->dur) return at->dur < o.at->dur;
      return at->thread < o.at->thread;
    }
  };
  // A binary min-heap of cursors, by hand for replace_top: switching from the current
  // cursor to the heap's earliest costs one sift instead of a pop and a push.
  std::vector<cursor> heap;
  std::optional<cursor> current;

  void sift_down(size_t i) {
    const size_t n = heap.size();
    for (;;) {
      size_t m = i;
      const size_t l = 2 * i + 1, rr = l + 1;
      if (l < n && heap[l].before(heap[m])) m = l;
      if (rr < n && heap[rr].before(heap[m])) m = rr;
      if (m == i) return;
      std::swap(heap[i], heap[m]);
      i = m;
    }
  }
  void push(const cursor& c) {
    heap.push_back(c);
    for (size_t i = heap.size() - 1; i > 0;) {
      const size_t p = (i - 1) / 2;
      if (!heap[i].before(heap[p])) break;
      std::swap(heap[i], heap[p]);
      i = p;
    }
  }

  std::unique_ptr<decoded> fresh() {
    if (spare.empty()) return std::make_unique<decoded>();
    auto d = std::move(spare.back());
    spare.pop_back();
    return d;
  }

  // Starts loading the next block, on a helper thread if one can be had.
  void start_load() {
    if (next_load || next_block >= r->blocks.size()) return;
    auto d = fresh();
    d->index = next_block++;
    const auto load = [at = r, into = d.get()] { return at->load_block(into->index, into->buf); };
    std::future<result<const fb::Block*>> done;
    try {
      done = std::async(std::launch::async, load);
    } catch (const std::system_error&) {  // no thread (a process limit): loaded when needed
      done = std::async(std::launch::deferred, load);
    }
    next_load.emplace(loading{std::move(d), std::move(done)});
  }

  result<void> decode_ahead() {
    while (!ahead) {
      start_load();
      if (!next_load) break;
      const auto loaded = next_load->done.get();
      auto d = std::move(next_load->d);
      next_load.reset();
      if (!loaded) return tl::unexpected(loaded.error());
      const fb::Block* b = *loaded;  // its tables were applied when the trace was opened
      if (!b->chunk() || b->chunk()->events() == 0 || !b->chunk()->threads()) {
        spare.push_back(std::move(d));
        continue;
      }
      ahead_chunk = b->chunk();  // points into d->buf, which moves with d
      ahead_min = ahead_chunk->min_ts();
      d->min_ts = ahead_min;
      ahead = std::move(d);
    }
    start_load();  // the one after, while the merge goes on
    return {};
  }

  // The next batch of a group; false when the group has no more events.
  result<bool> refill(cursor& c) {
    group_state& g = *c.g;
    g.batch.clear();
    while (g.batch.empty() && !g.dec->done()) {
      if (auto d = g.dec->decode(g.batch, batch_events, unknown); !d)
        return r->fail_block(c.block->index, d.error().message);
      FSRR_TRY(r->check_ids(c.block->index, g.batch));
      // The merge takes a block's events once the stream reaches its first time: events
      // before it would come out of order.
      for (const event& e : g.batch)
        if (e.ts < c.block->min_ts)
          return r->fail_block(c.block->index, "an event before the block's first time");
    }
    c.at = g.batch.data();
    c.end = g.batch.data() + g.batch.size();
    return c.at != c.end;
  }

  result<void> join_ahead() {
    decoded* d = ahead.get();
    const auto& groups = *ahead_chunk->threads();
    d->groups.resize(groups.size());
    d->live = 0;
    for (size_t k = 0; k < groups.size(); ++k) {
      const auto in = r->group_of(d->index, *groups.Get(k));
      if (!in) return tl::unexpected(in.error());
      d->groups[k].dec.emplace(*in, r->ops);
      cursor c{nullptr, nullptr, &d->groups[k], d};
      const auto more = refill(c);
      if (!more) return tl::unexpected(more.error());
      if (*more) {
        push(c);
        ++d->live;
      }
    }
    if (d->live)
      blocks.push_back(std::move(ahead));
    else
      spare.push_back(std::move(ahead));
    ahead.reset();
    return {};
  }

  void exhausted(decoded* d) {
    --d->live;
    while (!blocks.empty() && blocks.front()->live == 0) {
      spare.push_back(std::move(blocks.front()));
      blocks.pop_front();
    }
  }

  bool next(event& out) {
    if (!status) return false;
    auto r = step(out);
    if (r) return *r;
    status = tl::unexpected(r.error());
    return false;
  }

  result<bool> step(event& out) {
    for (;;) {
      FSRR_TRY(decode_ahead());
      const bool any = current || !heap.empty();
      const bool from_heap = !heap.empty() && (!current || heap[0].before(*current));
      const uint64_t first_ts = from_heap ? heap[0].at->ts : current ? current->at->ts : 0;
      if (ahead && (!any || ahead_min <= first_ts)) {
        FSRR_TRY(join_ahead());
        continue;
      }
      if (!any) return false;
      if (from_heap) {
        if (current) {
          std::swap(*current, heap[0]);
        } else {
          current = heap[0];
          heap[0] = heap.back();
          heap.pop_back();
        }
        sift_down(0);
      }
      out = *current->at++;
      if (current->at == current->end) {
        const auto more = refill(*current);
        if (!more) return tl::unexpected(more.error());
        if (!*more) {
          exhausted(current->block);
          current.reset();
        }
      }
      return true;
    }
  }
};

trace_reader::event_stream::event_stream(std::unique_ptr<impl> p) : impl_(std::move(p)) {}
trace_reader::event_stream::~event_stream() = default;
trace_reader::event_stream::event_stream(event_stream&&) noexcept = default;
bool trace_reader::event_stream::next(event& out) {
  return impl_->next(out);
}
result<void> trace_reader::event_stream::status() const {
  return impl_->status;
}

trace_reader::event_stream trace_reader::events() {
  auto s = std::make_unique<event_stream::impl>();
  s->r = impl_.get();
  return event_stream(std::move(s));
}

}  // namespace fsrr
