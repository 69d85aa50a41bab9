// The length of an optional FlatBuffers vector, 0 when the field is absent: what every reader
// of a block's columns compares before it reads them.
#pragma once

#include <cstddef>

#include <flatbuffers/flatbuffers.h>

namespace fsrr {

template <typename T>
size_t len(const flatbuffers::Vector<T>* v) {
  return v ? v->size() : 0;
}

}  // namespace fsrr
