// The ops handed to one replay thread: a single-producer, single-consumer queue of linked
// segments. It has no fixed capacity, so the dispatcher decides when to wait for room: in a
// timed replay never because of one thread whose ops lie far ahead (the others' ops would queue
// up behind it and run late), in an afap replay only when a thread is far behind.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>

#include "ordering.h"

namespace fsrr {

template <class T>
class lane_queue {
  static constexpr uint32_t segment_items = 128;
  struct segment {
    std::array<T, segment_items> items;
    std::atomic<segment*> next{nullptr};  // set before the first item in it is published
    uint32_t first = 0;                   // number of items[0]
  };

 public:
  progress_counter done;       // items the consumer finished; ordering waits on it too
  progress_counter published;  // items handed out

  // The consumer's position; start() gives the one at the queue's tail.
  struct cursor {
    uint32_t at = 0;
    uint32_t avail = 0;  // items known to be published
    segment* seg = nullptr;
  };

  // Producer: the slot of the next item; it becomes the consumer's at publish().
  T& slot() {
    if (!tail_seg_ || tail_ - tail_seg_->first == segment_items) link();
    return tail_seg_->items[tail_ - tail_seg_->first];
  }
  void publish() {
    ++tail_;
    published.advance();
  }
  uint32_t tail() const { return tail_; }
  // Producer: where a consumer started now begins.
  cursor start() {
    slot();
    return {tail_, tail_, tail_seg_};
  }
  // Producer, once the consumer has exited: gives back the memory; numbering goes on.
  void release() {
    segs_.clear();
    tail_seg_ = nullptr;
  }

  // Consumer: the item at c.at, once published.
  const T& next(cursor& c, const std::atomic<bool>& stop) {
    if (c.at == c.avail) {
      published.wait(c.at + 1, stop);
      c.avail = published.value.load(std::memory_order_acquire);
    }
    if (c.at - c.seg->first == segment_items) c.seg = c.seg->next.load(std::memory_order_relaxed);
    return c.seg->items[c.at - c.seg->first];
  }
  void finished(cursor& c) {
    ++c.at;
    done.advance();
  }
  // Consumer: past the item at c.at, which it reports done itself (op_runner::op_finished).
  void moved_on(cursor& c) { ++c.at; }
  // Consumer: whether next() would return at once.
  bool ready(const cursor& c) const { return c.at != c.avail || published.reached(c.at + 1); }

 private:
  void link() {
    std::unique_ptr<segment> s;
    // The consumer reads a segment's `next` after finishing its last item, so a segment is
    // free once one item past it is done.
    if (segs_.size() > 1 && done.reached(segs_.front()->first + segment_items + 1)) {
      s = std::move(segs_.front());
      segs_.pop_front();
    } else {
      s = std::make_unique<segment>();
    }
    s->first = tail_;
    s->next.store(nullptr, std::memory_order_relaxed);
    if (tail_seg_) tail_seg_->next.store(s.get(), std::memory_order_relaxed);
    tail_seg_ = s.get();
    segs_.push_back(std::move(s));
  }

  uint32_t tail_ = 0;
  segment* tail_seg_ = nullptr;
  std::deque<std::unique_ptr<segment>> segs_;  // in order; the last is tail_seg_
};

}  // namespace fsrr
