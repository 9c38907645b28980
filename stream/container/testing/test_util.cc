#include "stream/container/testing/test_util.h"

#include "absl/strings/str_cat.h"
#include "parser/element_type.h"

namespace hurray::stream::container::testing {

absl::Status RecordingSink::OnDescriptor(const TensorDescriptor& d) {
  if (!tensors.empty() && !tensors.back().complete) {
    errors.push_back("OnDescriptor before the previous OnTensorEnd");
  }
  if (ended) errors.push_back("OnDescriptor after OnEndOfStream");
  RecordedTensor t;
  t.descriptor = d;
  t.buffers.resize(d.buffer_count);
  tensors.push_back(std::move(t));
  return absl::OkStatus();
}

absl::Status RecordingSink::OnBufferPiece(uint32_t buffer_index,
                                          uint64_t offset_in_buffer,
                                          absl::Span<const uint8_t> piece) {
  ++pieces;
  if (tensors.empty() || tensors.back().complete) {
    errors.push_back("a piece outside a tensor");
    return absl::OkStatus();
  }
  RecordedTensor& t = tensors.back();
  if (buffer_index >= t.buffers.size()) {
    errors.push_back(absl::StrCat("piece of buffer ", buffer_index));
    return absl::OkStatus();
  }
  // Earlier buffers must be complete.
  for (uint32_t i = 0; i < buffer_index; ++i) {
    if (t.buffers[i].size() != t.descriptor.buffers[i].byte_size) {
      errors.push_back("a piece before the previous buffer was complete");
    }
  }
  std::vector<uint8_t>& b = t.buffers[buffer_index];
  if (offset_in_buffer != b.size()) {
    errors.push_back(
        absl::StrCat("piece at ", offset_in_buffer, ", expected ", b.size()));
  }
  if (piece.empty()) errors.push_back("empty piece");
  b.insert(b.end(), piece.begin(), piece.end());
  if (b.size() > t.descriptor.buffers[buffer_index].byte_size) {
    errors.push_back("a buffer received more than byte_size bytes");
  }
  return absl::OkStatus();
}

absl::Status RecordingSink::OnTensorEnd() {
  if (tensors.empty() || tensors.back().complete) {
    errors.push_back("OnTensorEnd without a tensor");
    return absl::OkStatus();
  }
  RecordedTensor& t = tensors.back();
  for (uint32_t i = 0; i < t.buffers.size(); ++i) {
    if (t.buffers[i].size() != t.descriptor.buffers[i].byte_size) {
      errors.push_back("OnTensorEnd before every byte arrived");
    }
  }
  t.complete = true;
  return absl::OkStatus();
}

absl::Status RecordingSink::OnEndOfStream() {
  if (!tensors.empty() && !tensors.back().complete) {
    errors.push_back("OnEndOfStream inside a tensor");
  }
  ended = true;
  return absl::OkStatus();
}

bool SameEvents(const RecordingSink& a, const RecordingSink& b) {
  if (a.ended != b.ended || a.tensors.size() != b.tensors.size()) return false;
  for (size_t i = 0; i < a.tensors.size(); ++i) {
    const RecordedTensor& x = a.tensors[i];
    const RecordedTensor& y = b.tensors[i];
    if (!(x.descriptor == y.descriptor) || x.buffers != y.buffers ||
        x.complete != y.complete) {
      return false;
    }
  }
  return true;
}

std::vector<uint8_t> Pattern(size_t size, uint32_t seed) {
  std::vector<uint8_t> v(size);
  uint32_t x = seed * 2654435761u + 12345u;
  for (size_t i = 0; i < size; ++i) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    v[i] = static_cast<uint8_t>(x | 1);  // never zero
  }
  return v;
}

std::vector<std::vector<uint8_t>> BuffersFor(const TensorDescriptor& d,
                                             uint32_t seed) {
  std::vector<std::vector<uint8_t>> buffers;
  for (uint32_t i = 0; i < d.buffer_count; ++i) {
    buffers.push_back(
        Pattern(static_cast<size_t>(d.buffers[i].byte_size), seed + i));
  }
  return buffers;
}

std::vector<absl::Span<const uint8_t>> Spans(
    const std::vector<std::vector<uint8_t>>& buffers) {
  std::vector<absl::Span<const uint8_t>> spans;
  for (const std::vector<uint8_t>& b : buffers) spans.emplace_back(b);
  return spans;
}

namespace {

// A shard of `parent` (HAS_SHARD), optionally an overlay member.
std::unique_ptr<TensorDescriptor> Shard(uint8_t type,
                                        std::vector<uint64_t> shape,
                                        std::vector<uint64_t> parent,
                                        std::vector<uint64_t> offset,
                                        int role) {
  auto d = vectors::Dense(type, shape);
  d->flags |= flag::kHasShard;
  for (size_t k = 0; k < parent.size(); ++k) {
    d->shard.parent_shape[k] = parent[k];
    d->shard.shard_offset[k] = offset[k];
  }
  if (role >= 0) {
    d->flags |= flag::kHasCompositeMember;
    d->composite_member.member_role = static_cast<uint8_t>(role);
  }
  return d;
}

}  // namespace

std::unique_ptr<TensorDescriptor> GroupHead(uint32_t members) {
  auto d = vectors::CompositePartition();
  d->layout.composition_rule = 0x03;
  d->layout.member_count = members;
  return d;
}

std::vector<vectors::Named> ContainerVectors(bool unbound_members) {
  using type_tag::kFloat16;
  using type_tag::kFloat32;
  std::vector<vectors::Named> out;
  for (vectors::Named& v : vectors::AllValid()) {
    const TensorDescriptor& d = *v.descriptor;
    if (d.has(flag::kHasCompositeMember) && !unbound_members) continue;
    const bool partition = v.name == "composite_partition";
    const bool overlay = v.name == "composite_overlay";
    out.push_back(std::move(v));
    if (partition) {  // f32 [8, 8] as two [4, 8] halves
      out.push_back(
          {"partition_top", Shard(kFloat32, {4, 8}, {8, 8}, {0, 0}, -1)});
      out.push_back(
          {"partition_bottom", Shard(kFloat32, {4, 8}, {8, 8}, {4, 0}, -1)});
    } else if (overlay) {  // f16 [4, 4]: a base, then a 2x2 correction
      out.push_back(
          {"overlay_base", Shard(kFloat16, {4, 4}, {4, 4}, {0, 0}, 0x01)});
      out.push_back({"overlay_correction",
                     Shard(kFloat16, {2, 2}, {4, 4}, {1, 1}, 0x00)});
    }
  }
  return out;
}

}  // namespace hurray::stream::container::testing
