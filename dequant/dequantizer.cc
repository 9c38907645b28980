#include "dequant/dequantizer.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "dequant/codec.h"
#include "dequant/kernels.h"

namespace hurray::dequant {
namespace {

Rule PackRule(Codec c) {
  switch (PackingOf(c).bits) {
    case 4:
      return Rule::kTypePack02;
    case 2:
      return Rule::kTypePack03;
    default:
      return Rule::kTypePack04;
  }
}

}  // namespace

absl::StatusOr<Dequantizer> Dequantizer::Create(const TensorDescriptor& d,
                                                const ParameterBytes& params,
                                                const DequantOptions& options) {
  absl::StatusOr<Plan> plan = MakePlan(d);
  if (!plan.ok()) return plan.status();
  absl::StatusOr<Params> loaded = LoadParams(*plan, params, options.mode);
  if (!loaded.ok()) return loaded.status();

  Dequantizer dq;
  dq.plan_ = *std::move(plan);
  dq.mode_ = options.mode;
  dq.stores_ = options.stores;
  dq.prefix_left_ = dq.plan_.byte_offset;
  const Plan& p = dq.plan_;
  if (p.has_blocks() && p.inner > 1) {
    // Natural block index (o·I + i)·nb + j, o over the dims before the
    // axis, i over those after it; access order (o·nb + j)·I + i, so that
    // one row of I elements reads consecutive parameters.
    auto transpose = [&p](const auto& natural, auto* access) {
      access->resize(natural.size());
      if (natural.empty()) return;  // symmetric: no zero points
      for (uint64_t o = 0; o < p.outer; ++o) {
        for (uint64_t i = 0; i < p.inner; ++i) {
          for (uint64_t j = 0; j < p.blocks_per_axis; ++j) {
            (*access)[(o * p.blocks_per_axis + j) * p.inner + i] =
                natural[(o * p.inner + i) * p.blocks_per_axis + j];
          }
        }
      }
    };
    transpose(loaded->scales, &dq.scales_);
    transpose(loaded->zero_points, &dq.zero_points_);
  } else {
    dq.scales_ = std::move(loaded->scales);
    dq.zero_points_ = std::move(loaded->zero_points);
  }
  for (int32_t zp : dq.zero_points_) {
    if (!NarrowAffineSafe(p.codec, zp)) dq.wide_ = true;
  }
  return dq;
}

void Dequantizer::Restart() {
  pos_ = 0;
  bytes_seen_ = 0;
  prefix_left_ = plan_.byte_offset;
  carry_len_ = 0;
  status_ = absl::OkStatus();
  warnings_ = DequantWarnings();
}

Dequantizer::Segment Dequantizer::SegmentAt(uint64_t pos) const {
  const Plan& p = plan_;
  const uint64_t rest = p.storage_elements - pos;
  Segment s;
  switch (p.scheme) {
    case Scheme::kPerTensorAffine:
      s.length = rest;
      return s;
    case Scheme::kPerChannelAffine:
      if (p.inner == 1) {  // channel = element index mod S
        s.length = rest;
        s.periodic = true;
        s.period = p.axis_len;
        s.phase = pos % p.axis_len;
      } else {  // one slab of S·I elements: channel = index / I
        const uint64_t slab = p.axis_len * p.inner;
        s.period = p.inner;
        s.phase = pos % slab;
        s.length = slab - s.phase;
      }
      return s;
    default:
      break;
  }
  const uint64_t k = p.block_size;
  const uint64_t sp = p.padded_axis_len;
  if (p.inner == 1) {
    if (sp == p.axis_len) {  // no padding: block = element index / K
      s.length = rest;
      s.period = k;
      s.phase = pos % k;
      s.base = pos / k;
      return s;
    }
    const uint64_t row = pos / sp;
    const uint64_t a = pos % sp;
    if (a >= p.axis_len) {
      s.padding = true;
      s.length = sp - a;
      return s;
    }
    s.length = p.axis_len - a;
    s.period = k;
    s.phase = a;
    s.base = row * p.blocks_per_axis;
    return s;
  }
  const uint64_t row = pos / p.inner;
  const uint64_t i = pos % p.inner;
  const uint64_t o = row / sp;
  const uint64_t a = row % sp;
  if (a >= p.axis_len) {
    s.padding = true;
    s.length = (sp - a) * p.inner - i;
    return s;
  }
  const uint64_t j = a / k;
  const uint64_t a_end = std::min((j + 1) * k, p.axis_len);
  s.length = (a_end - a) * p.inner - i;
  s.periodic = true;
  s.period = p.inner;
  s.phase = i;
  s.base = (o * p.blocks_per_axis + j) * p.inner;
  return s;
}

uint64_t Dequantizer::OutputCountFor(size_t piece_bytes) const {
  if (!status_.ok() || done()) return 0;
  uint64_t bytes = piece_bytes;
  bytes -= std::min<uint64_t>(bytes, prefix_left_);
  const Packing pk = PackingOf(plan_.codec);
  const uint64_t groups = (carry_len_ + bytes) / pk.group_bytes;
  const uint64_t end =
      plan_.storage_elements - pos_ <= groups * pk.group_elements
          ? plan_.storage_elements
          : pos_ + groups * pk.group_elements;
  return plan_.LogicalBefore(end) - plan_.LogicalBefore(pos_);
}

void Dequantizer::CheckPadding(const uint8_t* src, uint64_t src_first,
                               uint64_t first, uint64_t count) {
  for (uint64_t e = first; e < first + count; ++e) {
    if (ReadRawCode(src, e - src_first, plan_.codec) != 0) {
      if (warnings_.nonzero_padding == 0) warnings_.first_nonzero_padding = e;
      ++warnings_.nonzero_padding;
    }
  }
}

absl::Status Dequantizer::EmitGroups(const uint8_t* src, uint64_t groups,
                                     float** out) {
  const Packing pk = PackingOf(plan_.codec);
  const uint64_t total = plan_.storage_elements;
  const uint64_t src_first = pos_;
  const uint64_t end = std::min(total, pos_ + groups * pk.group_elements);
  const uint64_t used = total % pk.group_elements;
  if (end == total && used != 0 && Applies(PackRule(plan_.codec), mode_)) {
    // Unused slots of the last group must be zero (element-types.md).
    const uint8_t* last = src + (groups - 1) * pk.group_bytes;
    for (uint64_t slot = used; slot < pk.group_elements; ++slot) {
      if (ReadRawCode(last, slot, plan_.codec) != 0) {
        status_ = ToStatus(Rejection{
            PackRule(plan_.codec), total - used + slot,
            "the unused bits after the last element are not zero (offset: "
            "element index of the unused slot in the data buffer)"});
        return status_;
      }
    }
  }
  while (pos_ < end) {
    const Segment s = SegmentAt(pos_);
    const uint64_t len = std::min(s.length, end - pos_);
    if (s.padding) {
      CheckPadding(src, src_first, pos_, len);
    } else {
      Run run;
      run.codec = plan_.codec;
      run.src = src;
      run.first = pos_ - src_first;
      run.count = static_cast<size_t>(len);
      run.periodic = s.periodic;
      run.phase = s.phase;
      run.period = s.period;
      run.scales = scales_.data() + s.base;
      run.zero_points =
          zero_points_.empty() ? nullptr : zero_points_.data() + s.base;
      run.wide = wide_;
      run.stream = stream_;
      run.out = *out;
      DequantizeRun(run);
      *out += len;
    }
    pos_ += len;
  }
  return absl::OkStatus();
}

absl::Status Dequantizer::Consume(absl::Span<const uint8_t> piece,
                                  absl::Span<float> out,
                                  size_t* elements_written) {
  *elements_written = 0;
  if (!status_.ok()) return status_;
  if (piece.size() > plan_.data_buffer_size - bytes_seen_) {
    return absl::OutOfRangeError(absl::StrCat(
        "data piece of ", piece.size(), " bytes runs past the data buffer (",
        plan_.data_buffer_size, " bytes, ", bytes_seen_, " seen)"));
  }
  const uint64_t need = OutputCountFor(piece.size());
  if (out.size() < need) {
    return absl::InvalidArgumentError(absl::StrCat(
        "output holds ", out.size(), " floats, the piece completes ", need));
  }
  bytes_seen_ += piece.size();
  // Outputs much larger than the caches bypass them.
  stream_ = stores_ == StoreMode::kNonTemporal ||
            (stores_ == StoreMode::kAuto &&
             need * sizeof(float) >= kStreamOutputBytes);
  const uint8_t* p = piece.data();
  size_t n = piece.size();
  const size_t skip = static_cast<size_t>(std::min<uint64_t>(n, prefix_left_));
  p += skip;
  n -= skip;
  prefix_left_ -= skip;

  const Packing pk = PackingOf(plan_.codec);
  float* o = out.data();
  absl::Status status;
  if (!done() && n > 0 && carry_len_ > 0) {
    const size_t take = std::min<size_t>(pk.group_bytes - carry_len_, n);
    std::memcpy(carry_.data() + carry_len_, p, take);
    carry_len_ += take;
    p += take;
    n -= take;
    if (carry_len_ == pk.group_bytes) {
      carry_len_ = 0;
      status = EmitGroups(carry_.data(), 1, &o);
    }
  }
  if (status.ok() && !done() && n > 0) {
    const uint64_t groups_left =
        (plan_.storage_elements - pos_ + pk.group_elements - 1) /
        pk.group_elements;
    const uint64_t groups = std::min<uint64_t>(n / pk.group_bytes, groups_left);
    if (groups > 0) {
      status = EmitGroups(p, groups, &o);
      p += groups * pk.group_bytes;
      n -= static_cast<size_t>(groups * pk.group_bytes);
    }
    if (status.ok() && !done() && n > 0) {  // n < group_bytes here
      std::memcpy(carry_.data(), p, n);
      carry_len_ = n;
    }
  }
  *elements_written = static_cast<size_t>(o - out.data());
  return status;
}

absl::Status Dequantizer::Finish() const {
  if (!status_.ok()) return status_;
  if (!done()) {
    return absl::OutOfRangeError(
        absl::StrCat("the data ended after ", bytes_seen_,
                     " bytes: ", plan_.LogicalBefore(pos_), " of ",
                     plan_.logical_elements, " elements dequantized"));
  }
  return absl::OkStatus();
}

absl::Status DequantizeAll(const TensorDescriptor& d,
                           absl::Span<const uint8_t> data,
                           const ParameterBytes& params,
                           std::vector<float>* out,
                           const DequantOptions& options,
                           DequantWarnings* warnings) {
  absl::StatusOr<Dequantizer> dq = Dequantizer::Create(d, params, options);
  if (!dq.ok()) return dq.status();
  out->assign(static_cast<size_t>(dq->OutputCountFor(data.size())), 0.0f);
  size_t written = 0;
  absl::Status status = dq->Consume(data, absl::MakeSpan(*out), &written);
  out->resize(written);
  if (warnings != nullptr) *warnings = dq->warnings();
  if (!status.ok()) return status;
  return dq->Finish();
}

}  // namespace hurray::dequant
