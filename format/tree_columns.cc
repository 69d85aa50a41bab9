#include "tree_columns.h"

#include <fmt/format.h>

#include "column_codec.h"
#include "fb_len.h"

namespace fsrr {

flatbuffers::Offset<fb::Tree> write_tree(flatbuffers::FlatBufferBuilder& fbb,
                                         const std::vector<tree_entry>& tree) {
  std::vector<uint32_t> path_, mode, uid, gid, nlink, group, target, file, xc, xn, xs, ec;
  std::vector<uint64_t> size, alloc, eo, el;
  std::vector<int64_t> at, mt, ct;
  // Ids, mtime and atime as deltas to the previous entry, ctime to the entry's mtime: a
  // tree walk's neighbours are alike, and a file's ctime is usually its mtime.
  uint32_t prev_path = 0, prev_file = 0;
  int64_t prev_mtime = 0, prev_atime = 0;
  for (const auto& e : tree) {
    path_.push_back(e.path - prev_path);
    prev_path = e.path;
    mode.push_back(e.mode);
    uid.push_back(e.uid);
    gid.push_back(e.gid);
    size.push_back(e.size);
    alloc.push_back(e.allocated);
    at.push_back(codec::wrap_sub(e.atime_ns, prev_atime));
    prev_atime = e.atime_ns;
    mt.push_back(codec::wrap_sub(e.mtime_ns, prev_mtime));
    ct.push_back(codec::wrap_sub(e.ctime_ns, e.mtime_ns));
    prev_mtime = e.mtime_ns;
    nlink.push_back(e.nlink);
    group.push_back(e.link_group);
    target.push_back(e.target);
    file.push_back(e.file - prev_file);
    prev_file = e.file;
    xc.push_back(static_cast<uint32_t>(e.xattrs.size()));
    for (const auto& x : e.xattrs) {
      xn.push_back(x.name);
      xs.push_back(x.size);
    }
    ec.push_back(static_cast<uint32_t>(e.extents.size()));
    for (const auto& x : e.extents) {
      eo.push_back(x.offset);
      el.push_back(x.length);
    }
  }
  const auto v_path = fbb.CreateVector(path_);
  const auto v_mode = fbb.CreateVector(mode);
  const auto v_uid = fbb.CreateVector(uid);
  const auto v_gid = fbb.CreateVector(gid);
  const auto v_size = fbb.CreateVector(size);
  const auto v_alloc = fbb.CreateVector(alloc);
  const auto v_at = fbb.CreateVector(at);
  const auto v_mt = fbb.CreateVector(mt);
  const auto v_ct = fbb.CreateVector(ct);
  const auto v_nlink = fbb.CreateVector(nlink);
  const auto v_group = fbb.CreateVector(group);
  const auto v_target = fbb.CreateVector(target);
  const auto v_file = fbb.CreateVector(file);
  const auto v_xc = fbb.CreateVector(xc);
  const auto v_xn = fbb.CreateVector(xn);
  const auto v_xs = fbb.CreateVector(xs);
  const auto v_ec = fbb.CreateVector(ec);
  const auto v_eo = fbb.CreateVector(eo);
  const auto v_el = fbb.CreateVector(el);
  fb::TreeBuilder b(fbb);
  b.add_path(v_path);
  b.add_mode(v_mode);
  b.add_uid(v_uid);
  b.add_gid(v_gid);
  b.add_size(v_size);
  b.add_allocated(v_alloc);
  b.add_atime_ns(v_at);
  b.add_mtime_ns(v_mt);
  b.add_ctime_ns(v_ct);
  b.add_nlink(v_nlink);
  b.add_link_group(v_group);
  b.add_target(v_target);
  b.add_file(v_file);
  b.add_xattr_count(v_xc);
  b.add_xattr_name(v_xn);
  b.add_xattr_size(v_xs);
  b.add_extent_count(v_ec);
  b.add_extent_offset(v_eo);
  b.add_extent_length(v_el);
  return b.Finish();
}

result<void> read_tree(const fb::Tree& t, const table_sizes& known, tree_table& out) {
  auto fail = [](std::string what) { return failure(std::move(what)); };

  const size_t n = len(t.path());
  if (len(t.mode()) != n || len(t.uid()) != n || len(t.gid()) != n || len(t.size()) != n ||
      len(t.allocated()) != n || len(t.atime_ns()) != n || len(t.mtime_ns()) != n ||
      len(t.ctime_ns()) != n || len(t.nlink()) != n || len(t.link_group()) != n ||
      len(t.target()) != n || len(t.file()) != n || len(t.xattr_count()) != n ||
      len(t.extent_count()) != n || len(t.xattr_name()) != len(t.xattr_size()) ||
      len(t.extent_offset()) != len(t.extent_length()))
    return fail("tree columns disagree in length");
  size_t xi = 0, ei = 0;
  uint32_t path = 0, file = 0;
  int64_t mtime = 0, atime = 0;
  for (size_t k = 0; k < n; ++k) {
    tree_entry e;
    e.path = path += t.path()->Get(k);  // ids and mtime: deltas to the previous entry
    e.mode = t.mode()->Get(k);
    e.uid = t.uid()->Get(k);
    e.gid = t.gid()->Get(k);
    e.size = t.size()->Get(k);
    e.allocated = t.allocated()->Get(k);
    e.mtime_ns = mtime = codec::wrap_add(mtime, t.mtime_ns()->Get(k));
    e.atime_ns = atime = codec::wrap_add(atime, t.atime_ns()->Get(k));
    e.ctime_ns = codec::wrap_add(e.mtime_ns, t.ctime_ns()->Get(k));  // delta to the mtime
    e.nlink = t.nlink()->Get(k);
    e.link_group = t.link_group()->Get(k);
    e.target = t.target()->Get(k);
    e.file = file += t.file()->Get(k);
    if (e.path == no_id || e.path >= known.paths || e.target >= known.strings ||
        e.file >= known.files)
      return fail(fmt::format("tree entry {} refers to an unknown table entry", k));
    const uint32_t nx = t.xattr_count()->Get(k);
    if (nx > len(t.xattr_name()) - xi) return fail("tree xattrs run past their column");
    for (uint32_t x = 0; x < nx; ++x, ++xi) {
      const uint32_t name = t.xattr_name()->Get(xi);
      if (name == no_id || name >= known.strings) return fail("xattr name unknown");
      e.xattrs.push_back({name, t.xattr_size()->Get(xi)});
    }
    const uint32_t ne = t.extent_count()->Get(k);
    if (ne > len(t.extent_offset()) - ei) return fail("tree extents run past their column");
    for (uint32_t x = 0; x < ne; ++x, ++ei)
      e.extents.push_back({t.extent_offset()->Get(ei), t.extent_length()->Get(ei)});
    out.push_back(e);
  }
  return {};
}

}  // namespace fsrr
