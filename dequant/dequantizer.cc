#include "dequant/dequantizer.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "dequant/codec.h"
#include "dequant/kernels.h"
#include "dequant/minifloat.h"
#include "dequant/storage_walk.h"
#include "parser/quantization.h"

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

// DequantizeAll allocates at most max(kMaxBroadcastOutput, data bytes ·
// kMaxBroadcastFactor) floats for a non-row-major tensor.
constexpr uint64_t kMaxBroadcastOutput = uint64_t{1} << 24;
constexpr uint64_t kMaxBroadcastFactor = 64;

}  // namespace

absl::StatusOr<Dequantizer> Dequantizer::Create(const TensorDescriptor& d,
                                                const ParameterBytes& params,
                                                const DequantOptions& options) {
  absl::StatusOr<Plan> plan = MakePlan(d);
  if (!plan.ok()) return plan.status();
  return Create(*std::move(plan), d, params, options);
}

absl::StatusOr<Dequantizer> Dequantizer::Create(Plan plan,
                                                const TensorDescriptor& d,
                                                const ParameterBytes& params,
                                                const DequantOptions& options) {
  absl::StatusOr<Params> loaded = LoadParams(plan, params, options.mode);
  if (!loaded.ok()) return loaded.status();

  Dequantizer dq;
  dq.plan_ = std::move(plan);
  dq.mode_ = options.mode;
  dq.stores_ = options.stores;
  dq.min_elements_per_thread_ = options.min_elements_per_thread;
  dq.prefix_left_ = dq.plan_.byte_offset;
  const Plan& p = dq.plan_;
  if (!p.row_major()) {
    absl::StatusOr<std::unique_ptr<StorageWalk>> walk =
        StorageWalk::Create(d, p);
    if (!walk.ok()) return walk.status();
    dq.walk_ = *std::move(walk);
    dq.walk_done_ = dq.walk_->done();
    const Packing pk = PackingOf(p.codec);
    dq.pack_check_ = p.layout_tag == layout_tag::kColumnMajor &&
                     p.storage_elements % pk.group_elements != 0 &&
                     Applies(PackRule(p.codec), dq.mode_);
    dq.scales_ = std::move(loaded->scales);  // natural order
    dq.zero_points_ = std::move(loaded->zero_points);
    // Per-code tables (exactly the reference's per-element values).
    if (pk.bits <= 8) {
      const MinifloatDecoder minifloat = MinifloatDecoderFor(p.storage_type);
      const uint32_t codes = 1u << pk.bits;
      for (uint32_t c = 0; c < codes; ++c) {
        if (p.codec == Codec::kNf4) {
          dq.value_of_code_.push_back(kNf4Lut[c]);
        } else if (minifloat != nullptr) {
          dq.value_of_code_.push_back(minifloat(static_cast<uint8_t>(c)));
        } else {
          const bool negative =
              MinValue(p.codec) < 0 && ((c >> (pk.bits - 1)) & 1u) != 0;
          dq.int_of_code_.push_back(static_cast<int32_t>(c) -
                                    (negative ? (1 << pk.bits) : 0));
        }
      }
    }
  } else if (p.has_blocks() && p.inner > 1) {
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
  dq.zero_points_f_ = ExactFloatZeroPoints(p.codec, dq.zero_points_);
  return dq;
}

bool Dequantizer::streamable() const {
  return walk_ == nullptr || walk_->ordered();
}

void Dequantizer::Restart() {
  if (walk_ != nullptr) {
    walk_->Reset();
    walk_done_ = walk_->done();
    const Packing pk = PackingOf(plan_.codec);
    pack_check_ = plan_.layout_tag == layout_tag::kColumnMajor &&
                  plan_.storage_elements % pk.group_elements != 0 &&
                  Applies(PackRule(plan_.codec), mode_);
    tail_len_ = 0;
    scattered_ = 0;
  }
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
  if (!status_.ok() || done() || walk_ != nullptr) return 0;
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
                               uint64_t first, uint64_t count,
                               DequantWarnings* warnings) const {
  for (uint64_t e = first; e < first + count; ++e) {
    if (ReadRawCode(src, e - src_first, plan_.codec) != 0) {
      if (warnings->nonzero_padding == 0) warnings->first_nonzero_padding = e;
      ++warnings->nonzero_padding;
    }
  }
}

absl::Status Dequantizer::EmitGroups(const uint8_t* src, uint64_t groups,
                                     float** out) {
  const absl::Status s =
      EmitGroupsAt(src, groups, stream_, &pos_, out, &warnings_);
  if (!s.ok()) status_ = s;
  return s;
}

absl::Status Dequantizer::EmitGroupsAt(const uint8_t* src, uint64_t groups,
                                       bool stream, uint64_t* pos, float** out,
                                       DequantWarnings* warnings) const {
  const Packing pk = PackingOf(plan_.codec);
  const uint64_t total = plan_.storage_elements;
  const uint64_t src_first = *pos;
  const uint64_t end = std::min(total, *pos + groups * pk.group_elements);
  const uint64_t used = total % pk.group_elements;
  if (end == total && used != 0 && Applies(PackRule(plan_.codec), mode_)) {
    // Unused slots of the last group must be zero (element-types.md).
    const uint8_t* last = src + (groups - 1) * pk.group_bytes;
    for (uint64_t slot = used; slot < pk.group_elements; ++slot) {
      if (ReadRawCode(last, slot, plan_.codec) != 0) {
        return ToStatus(Rejection{
            PackRule(plan_.codec), total - used + slot,
            "the unused bits after the last element are not zero (the "
            "offset is the unused slot in the data buffer)",
            OffsetUnit::kElement});
      }
    }
  }
  while (*pos < end) {
    const Segment s = SegmentAt(*pos);
    const uint64_t len = std::min(s.length, end - *pos);
    if (s.padding) {
      CheckPadding(src, src_first, *pos, len, warnings);
    } else {
      Run run;
      run.codec = plan_.codec;
      run.src = src;
      run.first = *pos - src_first;
      run.count = static_cast<size_t>(len);
      run.periodic = s.periodic;
      run.phase = s.phase;
      run.period = s.period;
      run.scales = scales_.data() + s.base;
      run.zero_points =
          zero_points_.empty() ? nullptr : zero_points_.data() + s.base;
      run.zero_points_f =
          zero_points_f_.empty() ? nullptr : zero_points_f_.data() + s.base;
      run.wide = wide_;
      run.stream = stream;
      run.out = *out;
      DequantizeRun(run);
      *out += len;
    }
    *pos += len;
  }
  return absl::OkStatus();
}

absl::Status Dequantizer::Consume(absl::Span<const uint8_t> piece,
                                  absl::Span<float> out,
                                  size_t* elements_written) {
  *elements_written = 0;
  if (!status_.ok()) return status_;
  if (walk_ != nullptr) {
    return absl::FailedPreconditionError(absl::StrCat(
        "layout ", LayoutName(plan_.layout_tag),
        " stores elements out of logical order: use ConsumeScattered"));
  }
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

absl::Status Dequantizer::Feed(absl::Span<const uint8_t> piece,
                               DequantOutput& out) {
  if (!status_.ok()) return status_;
  if (walk_ != nullptr) {
    const absl::Span<float> tensor = out.Tensor(plan_.logical_elements);
    if (tensor.size() < plan_.logical_elements) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "layout ", static_cast<int>(plan_.layout_tag),
          " stores elements out of logical order, and the output cannot "
          "hold the whole tensor (",
          plan_.logical_elements, " floats)"));
    }
    return ConsumeScattered(piece, tensor);
  }
  if (piece.size() > plan_.data_buffer_size - bytes_seen_) {
    return absl::OutOfRangeError(absl::StrCat(
        "data piece of ", piece.size(), " bytes runs past the data buffer (",
        plan_.data_buffer_size, " bytes, ", bytes_seen_, " seen)"));
  }
  const uint64_t first = elements_written();
  const uint64_t need = OutputCountFor(piece.size());
  absl::Span<float> window;
  if (need > 0) {
    window = out.Window(first, static_cast<size_t>(need));
    if (window.size() < need) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "the output cannot take the ", need, " floats a piece of ",
          piece.size(), " bytes completes"));
    }
  }
  size_t written = 0;
  absl::Status status = Consume(piece, window, &written);
  if (written > 0) {
    absl::Status committed = out.Commit(first, written);
    if (status.ok()) status = std::move(committed);
  }
  return status;
}

absl::Status Dequantizer::ConsumeScattered(absl::Span<const uint8_t> piece,
                                           absl::Span<float> tensor) {
  if (!status_.ok()) return status_;
  if (tensor.size() < plan_.logical_elements) {
    return absl::InvalidArgumentError(
        absl::StrCat("the tensor output holds ", tensor.size(),
                     " floats, the tensor has ", plan_.logical_elements));
  }
  if (walk_ == nullptr) {  // row-major: in order, the fast path
    size_t written = 0;
    return Consume(piece,
                   tensor.subspan(static_cast<size_t>(elements_written())),
                   &written);
  }
  if (piece.size() > plan_.data_buffer_size - bytes_seen_) {
    return absl::OutOfRangeError(absl::StrCat(
        "data piece of ", piece.size(), " bytes runs past the data buffer (",
        plan_.data_buffer_size, " bytes, ", bytes_seen_, " seen)"));
  }
  if (!walk_->ordered() &&
      (bytes_seen_ != 0 || piece.size() != plan_.data_buffer_size)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "layout ", LayoutName(plan_.layout_tag),
        ": the strides interleave, so elements do not arrive in storage "
        "order; give the whole data buffer (",
        plan_.data_buffer_size, " bytes) in one piece"));
  }
  absl::Status status = Scatter(piece, tensor.data());
  // Carry the last bytes for elements cut by the next piece boundary.
  const size_t keep = std::min<size_t>(piece.size(), tail_.size());
  if (keep < tail_.size()) {
    const size_t old = std::min(tail_len_, tail_.size() - keep);
    std::memmove(tail_.data(), tail_.data() + tail_len_ - old, old);
    tail_len_ = old;
  } else {
    tail_len_ = 0;
  }
  std::memcpy(tail_.data() + tail_len_, piece.data() + piece.size() - keep,
              keep);
  tail_len_ += keep;
  bytes_seen_ += piece.size();
  return status;
}

uint32_t Dequantizer::CodeAt(uint64_t bit,
                             absl::Span<const uint8_t> piece) const {
  const uint32_t bits = PackingOf(plan_.codec).bits;
  const uint64_t first = bit / 8;
  const uint64_t last = (bit + bits - 1) / 8;
  uint64_t word = 0;
  for (uint64_t b = last + 1; b-- > first;) {
    const uint8_t byte =
        b >= bytes_seen_
            ? piece[static_cast<size_t>(b - bytes_seen_)]
            : tail_[static_cast<size_t>(tail_len_ - (bytes_seen_ - b))];
    word = word << 8 | byte;
  }
  word >>= bit % 8;
  return static_cast<uint32_t>(bits == 32 ? word : word & ((1u << bits) - 1));
}

// The code of kBits bits at bit `bit` of the data buffer, the bytes from
// `piece` when they are all there.
template <uint32_t kBits>
inline uint32_t ReadCode(const uint8_t* p, uint32_t shift) {
  if constexpr (kBits == 8) {
    return p[0];
  } else if constexpr (kBits == 16) {
    return static_cast<uint32_t>(p[0] | p[1] << 8);
  } else if constexpr (kBits == 32) {
    uint32_t v;
    std::memcpy(&v, p, 4);
    return v;  // little-endian (simd_kernels.cc asserts it)
  } else if constexpr (kBits == 6) {
    if (shift <= 2) return (p[0] >> shift) & 0x3Fu;
    return ((p[0] | p[1] << 8) >> shift) & 0x3Fu;
  } else {
    return (p[0] >> shift) & ((1u << kBits) - 1);
  }
}

template <uint32_t kBits>
void Dequantizer::ScatterElements(absl::Span<const uint8_t> piece,
                                  float* tensor) {
  const uint64_t start = bytes_seen_;
  const uint64_t end = start + piece.size();
  const int64_t base_bit = static_cast<int64_t>(plan_.byte_offset) * 8;
  const bool per_tensor = plan_.scheme == Scheme::kPerTensorAffine;
  const float tensor_scale = plan_.tensor_scale;
  const int64_t tensor_zp = plan_.tensor_zero_point;
  const float* scales = scales_.data();
  const int32_t* zps = zero_points_.empty() ? nullptr : zero_points_.data();
  const float* values =
      value_of_code_.empty() ? nullptr : value_of_code_.data();
  const int32_t* ints = int_of_code_.data();
  StorageWalk& w = *walk_;
  while (!w.done()) {
    // Within buffer 0: the addresser checked every offset.
    const uint64_t bit = static_cast<uint64_t>(
        base_bit + w.offset() * static_cast<int64_t>(kBits));
    const uint64_t first = bit / 8;
    if ((bit + kBits - 1) / 8 >= end) break;  // not complete yet
    const uint32_t code =
        first >= start
            ? ReadCode<kBits>(piece.data() + (first - start), bit % 8)
            : CodeAt(bit, piece);
    if (w.padding()) {
      if (code != 0) {
        const uint64_t at = static_cast<uint64_t>(w.offset());
        if (warnings_.nonzero_padding == 0 ||
            at < warnings_.first_nonzero_padding) {
          warnings_.first_nonzero_padding = at;
        }
        ++warnings_.nonzero_padding;
      }
      w.Next();
      continue;
    }
    // The reference's arithmetic (dequant/scalar.h): table value · scale,
    // or float32(q - zero_point) · scale with the difference exact.
    const size_t param = static_cast<size_t>(w.param());
    const float scale = per_tensor ? tensor_scale : scales[param];
    float value;
    if (values != nullptr) {
      value = values[code] * scale;
    } else {
      int64_t q;
      if constexpr (kBits <= 8) {
        q = ints[code];
      } else {
        q = MinValue(plan_.codec) < 0
                ? static_cast<int64_t>(static_cast<int32_t>(
                      kBits == 16 ? static_cast<uint32_t>(static_cast<int16_t>(
                                        static_cast<uint16_t>(code)))
                                  : code))
                : static_cast<int64_t>(code);
      }
      const int64_t zp =
          per_tensor ? tensor_zp : (zps != nullptr ? zps[param] : 0);
      value = static_cast<float>(q - zp) * scale;
    }
    tensor[w.logical()] = value;
    ++scattered_;
    w.Next();
  }
}

absl::Status Dequantizer::Scatter(absl::Span<const uint8_t> piece,
                                  float* tensor) {
  const uint32_t bits = PackingOf(plan_.codec).bits;
  const uint64_t end = bytes_seen_ + piece.size();
  const int64_t base_bit = static_cast<int64_t>(plan_.byte_offset) * 8;
  switch (bits) {
    case 2:
      ScatterElements<2>(piece, tensor);
      break;
    case 4:
      ScatterElements<4>(piece, tensor);
      break;
    case 6:
      ScatterElements<6>(piece, tensor);
      break;
    case 16:
      ScatterElements<16>(piece, tensor);
      break;
    case 32:
      ScatterElements<32>(piece, tensor);
      break;
    default:
      ScatterElements<8>(piece, tensor);
      break;
  }
  StorageWalk& w = *walk_;
  if (pack_check_) {
    // Column-major stores the packed grid: the unused slots of its last
    // group must be zero (element-types.md), as for row-major.
    const Packing pk = PackingOf(plan_.codec);
    const uint64_t total = plan_.storage_elements;
    const uint64_t group_end =
        (total / pk.group_elements + 1) * pk.group_elements;
    const uint64_t last_bit =
        static_cast<uint64_t>(base_bit) + group_end * bits;
    if ((last_bit - 1) / 8 < end) {
      pack_check_ = false;
      for (uint64_t slot = total; slot < group_end; ++slot) {
        if (CodeAt(static_cast<uint64_t>(base_bit) + slot * bits, piece) != 0) {
          status_ = ToStatus(Rejection{
              PackRule(plan_.codec), slot,
              "the unused bits after the last element are not zero (the "
              "offset is the unused slot in the data buffer)",
              OffsetUnit::kElement});
          return status_;
        }
      }
    }
  }
  walk_done_ = w.done() && !pack_check_;
  return absl::OkStatus();
}

absl::Status Dequantizer::ConsumeWhole(absl::Span<const uint8_t> data,
                                       absl::Span<float> tensor, int threads) {
  const Plan& p = plan_;
  if (walk_ != nullptr || threads <= 1 || bytes_seen_ != 0 || !status_.ok() ||
      data.size() > p.data_buffer_size ||
      data.size() - std::min<uint64_t>(data.size(), p.byte_offset) <
          p.storage_bytes) {
    return ConsumeScattered(data, tensor);
  }
  if (tensor.size() < p.logical_elements) {
    return absl::InvalidArgumentError(
        absl::StrCat("the tensor output holds ", tensor.size(),
                     " floats, the tensor has ", p.logical_elements));
  }
  const Packing pk = PackingOf(p.codec);
  const uint64_t groups =
      (p.storage_elements + pk.group_elements - 1) / pk.group_elements;
  // Parts of whole groups, rounded to 64 groups (a cache line of output or
  // more per part boundary). Each part is independent: the parameters are
  // read-only, and every element's value is the same whatever run it falls
  // in, so the result is bit-identical to one thread.
  const uint64_t parts = ThreadParts(groups, p.logical_elements, threads,
                                     min_elements_per_thread_);
  const bool stream =
      stores_ == StoreMode::kNonTemporal ||
      (stores_ == StoreMode::kAuto &&
       p.logical_elements * sizeof(float) >= kStreamOutputBytes);
  const uint8_t* base = data.data() + p.byte_offset;
  std::vector<uint64_t> cut(parts + 1, groups);
  for (uint64_t i = 0; i < parts; ++i) {
    cut[i] = std::min(groups, (groups * i / parts + 63) / 64 * 64);
  }
  cut[0] = 0;
  std::vector<absl::Status> status(parts);
  std::vector<DequantWarnings> found(parts);
  auto work = [&](uint64_t i) {
    uint64_t pos = cut[i] * pk.group_elements;
    float* o = tensor.data() + p.LogicalBefore(pos);
    if (cut[i + 1] > cut[i]) {
      status[i] =
          EmitGroupsAt(base + cut[i] * pk.group_bytes, cut[i + 1] - cut[i],
                       stream, &pos, &o, &found[i]);
    }
  };
  std::vector<std::thread> pool;
  pool.reserve(static_cast<size_t>(parts - 1));
  for (uint64_t i = 1; i < parts; ++i) pool.emplace_back(work, i);
  work(0);
  for (std::thread& t : pool) t.join();

  DequantWarnings merged;
  for (const DequantWarnings& w : found) {  // parts in storage order
    if (w.nonzero_padding != 0 && merged.nonzero_padding == 0) {
      merged.first_nonzero_padding = w.first_nonzero_padding;
    }
    merged.nonzero_padding += w.nonzero_padding;
  }
  warnings_ = merged;
  for (const absl::Status& s : status) {
    if (!s.ok()) {
      // As one Consume of the whole buffer: the last group's check comes
      // before anything is written (pos_ stays 0) or scanned.
      status_ = s;
      warnings_ = DequantWarnings();
      return s;
    }
  }
  pos_ = p.storage_elements;
  bytes_seen_ = data.size();
  prefix_left_ = 0;
  return absl::OkStatus();
}

absl::Status Dequantizer::Finish() const {
  if (!status_.ok()) return status_;
  if (!done()) {
    return absl::OutOfRangeError(absl::StrCat(
        "the data ended after ", bytes_seen_, " bytes: ", elements_written(),
        " of ", plan_.logical_elements, " elements dequantized"));
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
  if (!dq->in_order()) {
    // Broadcast (zero) strides can make a tiny buffer a huge tensor: the
    // output allocated here is bounded by the data it comes from.
    const uint64_t logical = dq->plan().logical_elements;
    if (logical > kMaxBroadcastOutput &&
        logical / kMaxBroadcastFactor > data.size()) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "the tensor has ", logical, " elements for ", data.size(),
          " data bytes (broadcast strides): use ConsumeScattered with an "
          "output of your own"));
    }
    out->assign(static_cast<size_t>(logical), 0.0f);
    absl::Status status = dq->ConsumeScattered(data, absl::MakeSpan(*out));
    if (warnings != nullptr) *warnings = dq->warnings();
    if (!status.ok()) return status;
    return dq->Finish();
  }
  if (options.threads > 1) {
    out->resize(static_cast<size_t>(dq->plan().logical_elements));
    absl::Status status =
        dq->ConsumeWhole(data, absl::MakeSpan(*out), options.threads);
    // As one Consume: only the elements written.
    out->resize(static_cast<size_t>(dq->elements_written()));
    if (warnings != nullptr) *warnings = dq->warnings();
    if (!status.ok()) return status;
    return dq->Finish();
  }
  out->assign(static_cast<size_t>(dq->OutputCountFor(data.size())), 0.0f);
  size_t written = 0;
  absl::Status status = dq->Consume(data, absl::MakeSpan(*out), &written);
  out->resize(written);
  if (warnings != nullptr) *warnings = dq->warnings();
  if (!status.ok()) return status;
  return dq->Finish();
}

}  // namespace hurray::dequant
