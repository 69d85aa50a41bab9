// trace_anatomy FILE: where a trace's bytes go. Every column of every block, gathered across
// blocks and compressed on its own with zstd at the writer's level: the share each column
// would take alone. A guide for tuning the column codec, not an exact split of the file.
#include <zstd.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "container.h"
#include "trace_error.h"
#include "trace_generated.h"
#include "trace_reader.h"

using namespace fsrr;

namespace {

std::map<std::string, std::vector<uint8_t>> streams;

template <typename T>
void add(const std::string& name, const flatbuffers::Vector<T>* v) {
  if (!v) return;
  auto& s = streams[name];
  const auto* p = reinterpret_cast<const uint8_t*>(v->data());
  s.insert(s.end(), p, p + v->size() * sizeof(T));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2 && argc != 3) {
    fmt::print(stderr, "usage: trace_anatomy FILE [DUMP_DIR]\n");
    return 2;
  }
  std::ifstream in(argv[1], std::ios::binary);
  const std::vector<uint8_t> file{std::istreambuf_iterator<char>(in), {}};
  const uint64_t events = or_throw(trace_reader::open(argv[1])).summary().events;
  std::vector<uint8_t> buf;
  uint64_t block_bytes = 0;
  for (const auto& f : container::scan(file).frames) {
    if (f.kind != container::frame_ref::block) continue;
    block_bytes += f.size;
    if (!container::decompress_frame({file.data() + f.offset, f.size}, buf)) return 1;
    const auto* b = flatbuffers::GetRoot<fb::Block>(buf.data());
    if (const auto* d = b->defs()) {
      add("defs.path_parent", d->path_parent());
      add("defs.path_name_len", d->path_name_len());
      add("defs.path_names", d->path_names());
      add("defs.strings", d->string_bytes());
      add("defs.file_dev", d->file_dev());
      add("defs.file_ino", d->file_ino());
      add("defs.file_gen", d->file_gen());
      add("defs.file_type", d->file_type());
    }
    if (const auto* c = b->chunk(); c && c->threads()) {
      for (const auto* g : *c->threads()) {
        add("ev.op", g->op());
        add("ev.gap", g->gap());
        add("ev.dur", g->dur());
        add("ev.result", g->result());
        add("ev.fd", g->fd());
        add("ev.fd2", g->fd2());
        add("ev.file", g->file());
        add("ev.file2", g->file2());
        add("ev.path", g->path());
        add("ev.path2", g->path2());
        add("ev.offset", g->offset());
        add("ev.offset2", g->offset2());
        add("ev.size", g->size());
        add("ev.flags", g->flags());
        add("ev.mode", g->mode());
        add("ev.aux", g->aux());
      }
    }
    if (const auto* t = b->tree()) {
      add("tree.path", t->path());
      add("tree.mode", t->mode());
      add("tree.uid", t->uid());
      add("tree.gid", t->gid());
      add("tree.size", t->size());
      add("tree.allocated", t->allocated());
      add("tree.atime", t->atime_ns());
      add("tree.mtime", t->mtime_ns());
      add("tree.ctime", t->ctime_ns());
      add("tree.nlink", t->nlink());
      add("tree.link_group", t->link_group());
      add("tree.target", t->target());
      add("tree.file", t->file());
      add("tree.xattr", t->xattr_count());
      add("tree.extent", t->extent_count());
    }
  }
  std::vector<std::pair<size_t, std::string>> rows;
  size_t total = 0;
  for (const auto& [name, s] : streams) {
    std::vector<uint8_t> out(ZSTD_compressBound(s.size()));
    const size_t n = ZSTD_compress(out.data(), out.size(), s.data(), s.size(), 3);
    rows.emplace_back(n, name);
    total += n;
  }
  std::sort(rows.rbegin(), rows.rend());
  if (argc == 3)  // each column's raw bytes, for experiments with other encoders
    for (const auto& [name, s] : streams) {
      std::ofstream out(std::string(argv[2]) + "/" + name, std::ios::binary);
      out.write(reinterpret_cast<const char*>(s.data()), static_cast<std::streamsize>(s.size()));
    }
  fmt::print("{}: {} bytes, {} events, {:.2f} bytes/event; blocks {} bytes\n", argv[1],
             file.size(), events, double(file.size()) / events, block_bytes);
  fmt::print("{:<20}{:>12}{:>12}{:>10}\n", "column", "raw", "zstd-3", "B/event");
  for (const auto& [n, name] : rows)
    fmt::print("{:<20}{:>12}{:>12}{:>10.3f}\n", name, streams[name].size(), n, double(n) / events);
  fmt::print("{:<20}{:>12}{:>12}{:>10.3f}\n", "sum of columns", "", total, double(total) / events);
  return 0;
}
