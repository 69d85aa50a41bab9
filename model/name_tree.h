// A namespace of names in flat tables, for the end-state model: a node is 16 bytes (its parent,
// a value, how many names are below it, its name) and one 4-byte slot of a hash table keyed by
// (parent, name), which holds the node alone: the hash is worked out again when a slot moves.
// A name is the owner's where it has it (a reference it resolves: the end-state model's names
// are the trace's path components, which the reader keeps), else a copy in the tree's own
// arena. A renamed directory takes what is below it along, since children name their parent,
// not the other way round. Names in order come from an index built when asked for
// (ordered()), not kept all along.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <string_view>
#include <vector>

#include "name_arena.h"

namespace fsrr {

class name_tree {
 public:
  using id = uint32_t;
  static constexpr id root = 0;
  static constexpr id none = UINT32_MAX;

  // A name the owner keeps, from 1 up to (not including) own: `names` gives its text, which
  // must stay put while the tree has it; own: the tree keeps a copy.
  using name_ref = uint32_t;
  static constexpr name_ref own = 1u << 31;
  using name_source = std::function<std::string_view(name_ref)>;

  explicit name_tree(uint32_t root_value = 0, name_source names = {});

  id child(id dir, std::string_view name) const;  // none if dir has no such name
  // A new node dir/name holding `value`; dir must not have the name already. `ref`, if not
  // own, is the owner's reference to the same text.
  id add(id dir, std::string_view name, uint32_t value, name_ref ref = own);
  // Takes n out of its directory: a node and all below it, to link() elsewhere or drop().
  void unlink(id n);
  // Puts unlinked n at dir/name; dir must not have the name already.
  void link(id n, id dir, std::string_view name, name_ref ref = own);
  // Unlinked (only) n is gone for good. Its id is reused unless names are below it (then they stay,
  // unreachable, so that no later node inherits them).
  void drop(id n);

  uint32_t& value(id n) { return nodes_[n].value; }
  uint32_t value(id n) const { return nodes_[n].value; }
  std::string_view name(id n) const { return text(nodes_[n].name); }
  id parent(id n) const { return nodes_[n].parent; }
  size_t size() const { return nodes_.size(); }        // ids handed out, freed ones included
  size_t compactions() const { return compactions_; }  // of the own names' arena, so far

  // Every linked node's children in name order: children(n) is a range of ids.
  class index {
   public:
    struct range {
      const id* b;
      const id* e;
      const id* begin() const { return b; }
      const id* end() const { return e; }
    };
    range children(id n) const {
      return {order_.data() + first_[n], order_.data() + first_[n + 1]};
    }

   private:
    friend class name_tree;
    std::vector<uint32_t> first_;  // by node: where its children start in order_
    std::vector<id> order_;
  };
  index ordered() const;
  // The lookup table let go of: child() no longer works, ordered() still does (take()).
  void forget_lookup();

 private:
  struct node {
    id parent = none;
    uint32_t value = 0;
    uint32_t kids : 31 = 0;  // linked children
    uint32_t free : 1 = 0;   // 1: in free_
    // 0: none; below own, the owner's name_ref; else own | its place in arena_ (2 GiB of
    // copies at most: compacted, they are the few names the owner does not have)
    uint32_t name = 0;
  };
  static_assert(sizeof(node) == 16);
  struct slot {
    id n = none;
  };
  static uint32_t hash_of(id dir, std::string_view name);
  uint32_t home_of(id n) const { return hash_of(nodes_[n].parent, text(nodes_[n].name)); }
  size_t find_slot(id dir, std::string_view name, uint32_t h) const;  // its slot, or an empty one
  void insert(id n);
  void erase(id n);
  void grow();
  void set_name(id n, std::string_view name, name_ref ref);
  void forget_name(node& x);
  std::string_view text(uint32_t name) const {
    if (name & own) return arena_.get(name & ~own);
    return name ? names_(name) : std::string_view();
  }
  void compact_names();

  std::deque<node> nodes_;
  std::vector<id> free_;
  std::vector<slot> slots_;
  size_t used_ = 0;
  name_source names_;
  name_arena arena_;
  uint64_t name_bytes_ = 0, dead_bytes_ = 0;  // in arena_: all, and those no node names
  size_t compactions_ = 0;
};

}  // namespace fsrr
