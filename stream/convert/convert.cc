#include "stream/convert/convert.h"

#include <fnmatch.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "dequant/minifloat.h"
#include "parser/decoder.h"
#include "parser/descriptor.h"
#include "parser/element_type.h"
#include "parser/quantization.h"
#include "stream/container/hrry_writer.h"
#include "stream/container/kv_builder.h"
#include "stream/container/stream_writer.h"
#include "stream/container/utf8.h"
#include "stream/convert/chunk_pipeline.h"
#include "stream/convert/convert_plan.h"
#include "stream/convert/ggml_blocks.h"
#include "stream/convert/ggml_kmin.h"
#include "stream/convert/output_limits.h"

namespace hurray::stream::convert {
namespace {

using internal::AddGgufKv;
using internal::BlockType;
using internal::ChooseQuantized;
using internal::Describe;
using internal::Floats;
using internal::ForTensor;
using internal::IsKMin;
using internal::Kind;
using internal::KMinOf;
using internal::Plan;
using internal::PlanGguf;
using internal::PlanSafetensors;

// Bytes per element of a plain float source, and bytes per block of 32 of
// a ggml one (0 for the other kind).
uint64_t ElementBytes(Floats f) {
  switch (f) {
    case Floats::kF32:
      return 4;
    case Floats::kF16:
    case Floats::kBF16:
      return 2;
    case Floats::kF64:
      return 8;
    default:
      return 0;
  }
}
uint64_t BlockBytes(Floats f) {
  switch (f) {
    case Floats::kQ4_1:
      return 20;
    case Floats::kQ5_0:
      return 22;
    case Floats::kQ5_1:
      return 24;
    case Floats::kQ8_1:
      return 36;
    default:
      return 0;
  }
}

float Half(const uint8_t* p) {
  return dequant::F16ToF32(static_cast<uint16_t>(p[0] | (p[1] << 8)));
}

// ggml's dequantize_row_q4_1 / q5_0 / q5_1 / q8_1 for one block of 32.
void GgmlBlock(Floats f, const uint8_t* x, float* y) {
  switch (f) {
    case Floats::kQ4_1: {
      const float d = Half(x), m = Half(x + 2);
      for (int j = 0; j < 16; ++j) {
        y[j] = (x[4 + j] & 0x0F) * d + m;
        y[j + 16] = (x[4 + j] >> 4) * d + m;
      }
      return;
    }
    case Floats::kQ5_0:
    case Floats::kQ5_1: {
      const bool one = f == Floats::kQ5_1;
      const float d = Half(x), m = one ? Half(x + 2) : 0.0f;
      const uint8_t* qhp = x + (one ? 4 : 2);
      const uint32_t qh = qhp[0] | (qhp[1] << 8) | (qhp[2] << 16) |
                          (static_cast<uint32_t>(qhp[3]) << 24);
      const uint8_t* qs = qhp + 4;
      for (int j = 0; j < 16; ++j) {
        const uint8_t xh0 = ((qh >> j) << 4) & 0x10;
        const uint8_t xh1 = (qh >> (j + 12)) & 0x10;
        const int x0 = (qs[j] & 0x0F) | xh0, x1 = (qs[j] >> 4) | xh1;
        if (one) {
          y[j] = x0 * d + m;
          y[j + 16] = x1 * d + m;
        } else {
          y[j] = (x0 - 16) * d;
          y[j + 16] = (x1 - 16) * d;
        }
      }
      return;
    }
    default: {  // Q8_1: {d, s, qs[32]}
      const float d = Half(x);
      for (int j = 0; j < 32; ++j) y[j] = static_cast<int8_t>(x[4 + j]) * d;
      return;
    }
  }
}

class SourceRows : public FloatRows {
 public:
  SourceRows(const ByteSource& source, const Plan& p)
      : source_(source), p_(p) {}
  absl::Status Read(uint64_t first, uint64_t n, float* out) override {
    if (p_.floats == Floats::kQ4_K || p_.floats == Floats::kQ5_K ||
        p_.floats == Floats::kQ2_K)
      return ReadKQuant(first, n, out);
    // Plain types: n elements at `first`; ggml blocks: whole blocks of 32
    // (the Quantizer asks for multiples of 32 there).
    const uint64_t bs = BlockBytes(p_.floats);
    const uint64_t at =
        bs == 0 ? first * ElementBytes(p_.floats) : first / 32 * bs;
    const uint64_t len = bs == 0 ? n * ElementBytes(p_.floats) : n / 32 * bs;
    bytes_.resize(static_cast<size_t>(len));
    absl::Status s =
        source_.ReadAt(p_.begin + at, absl::MakeSpan(bytes_), "tensor data");
    if (!s.ok()) return s;
    const uint8_t* b = bytes_.data();
    switch (p_.floats) {
      case Floats::kF32:
        std::memcpy(out, b, n * 4);  // little-endian host (x86-64)
        break;
      case Floats::kF16:
        for (size_t i = 0; i < n; ++i) out[i] = Half(b + 2 * i);
        break;
      case Floats::kBF16:
        for (size_t i = 0; i < n; ++i)
          out[i] = dequant::Bf16ToF32(
              static_cast<uint16_t>(b[2 * i] | (b[2 * i + 1] << 8)));
        break;
      case Floats::kF64:
        for (size_t i = 0; i < n; ++i) {
          double v;
          std::memcpy(&v, b + 8 * i, 8);
          out[i] = static_cast<float>(v);
        }
        break;
      default:
        for (size_t k = 0; k < n / 32; ++k)
          GgmlBlock(p_.floats, b + k * bs, out + 32 * k);
    }
    return absl::OkStatus();
  }

 private:
  // K-quant blocks of 256: the blocks holding [first, first + n) decoded
  // with ggml's formula, and the range copied out.
  absl::Status ReadKQuant(uint64_t first, uint64_t n, float* out) {
    const KMinType type = p_.floats == Floats::kQ4_K   ? KMinType::kQ4_K
                          : p_.floats == Floats::kQ5_K ? KMinType::kQ5_K
                                                       : KMinType::kQ2_K;
    const uint64_t bs = KMinSourceBytes(type);
    const uint64_t b0 = first / 256, b1 = (first + n + 255) / 256;
    bytes_.resize(static_cast<size_t>((b1 - b0) * bs));
    absl::Status s = source_.ReadAt(p_.begin + b0 * bs, absl::MakeSpan(bytes_),
                                    "tensor data");
    if (!s.ok()) return s;
    float y[256];
    std::string why;
    for (uint64_t b = b0; b < b1; ++b) {
      if (!GgmlKMinValues(type, bytes_.data() + (b - b0) * bs, y, &why))
        return absl::InvalidArgumentError(
            absl::StrCat(p_.source_type, " block ", b, ": ", why));
      const uint64_t lo = std::max(first, b * 256);
      const uint64_t hi = std::min(first + n, (b + 1) * 256);
      std::memcpy(out + (lo - first), y + (lo - b * 256), (hi - lo) * 4);
    }
    return absl::OkStatus();
  }

  const ByteSource& source_;
  const Plan& p_;
  std::vector<uint8_t> bytes_;
};

// Streams one buffer of a plan's tensor from the source.
class TensorStreamer {
 public:
  TensorStreamer(const ByteSource& source, size_t chunk_bytes,
                 uint64_t spool_bytes, bool threaded)
      : source_(source),
        chunk_bytes_(std::max<size_t>(chunk_bytes, 4096)),
        spool_bytes_(spool_bytes),
        threaded_(threaded) {}

  absl::Status Write(const Plan& p, uint32_t buffer,
                     stream::container::ByteSink out) {
    switch (p.kind) {
      case Kind::kCopy:
        return Copy(p, out);
      case Kind::kBool:
        return Bools(p, out);
      case Kind::kE8M0:
        return E8M0(p, out);
      case Kind::kQ4_K:
      case Kind::kQ5_K:
      case Kind::kQ2_K:
        return KMin(p, buffer, out);
      default:
        return Blocks(p, buffer, out);
    }
  }

 private:
  absl::Status ReadChunk(uint64_t at, size_t n) {
    in_.resize(n);
    return source_.ReadAt(at, absl::MakeSpan(in_), "tensor data");
  }

  absl::Status Copy(const Plan& p, stream::container::ByteSink out) {
    uint64_t done = 0;
    const absl::Status kernel = KernelCopy(p, &done);
    if (!kernel.ok()) return kernel;
    while (done < p.source_bytes) {
      const size_t n = static_cast<size_t>(
          std::min<uint64_t>(chunk_bytes_, p.source_bytes - done));
      absl::Status s = ReadChunk(p.begin + done, n);
      if (s.ok()) s = out(in_);
      if (!s.ok()) return s;
      done += n;
    }
    return absl::OkStatus();
  }

  // Copies what it can of p's bytes with copy_file_range (fd_copy.h) and
  // counts them with the writer; `*done` bytes are written when it returns.
  // Stops for good at the first output the kernel cannot copy to.
  absl::Status KernelCopy(const Plan& p, uint64_t* done) {
    const ConvertOptions::DirectOutput* d = direct_;
    if (d == nullptr || d->fd < 0 || kernel_off_) return absl::OkStatus();
    if (!IsRegularFile(d->fd)) {
      kernel_off_ = true;
      return absl::OkStatus();
    }
    bool flushed = false;
    while (*done < p.source_bytes) {
      FileRange r;
      absl::Status s = source_.FileRangeAt(
          p.begin + *done, p.source_bytes - *done, &r, "tensor data");
      if (!s.ok() || r.fd < 0) return s;  // not in a file: the sink's way
      if (!flushed) {
        // The sink's bytes first: the kernel writes at the file position.
        s = d->flush ? d->flush() : absl::OkStatus();
        if (!s.ok()) return s;
        flushed = true;
      }
      bool unsupported = false;
      absl::StatusOr<uint64_t> n = ::hurray::stream::convert::KernelCopy(
          r.fd, r.offset, d->fd, r.length, d->copy, "tensor data",
          &unsupported);
      if (!n.ok()) return n.status();
      s = writer_->CountWritten(*n);
      if (!s.ok()) return s;
      *done += *n;
      copied_ += *n;
      if (unsupported) {
        kernel_off_ = true;
        return absl::OkStatus();
      }
    }
    return absl::OkStatus();
  }

 public:
  // Kernel copies for Kind::kCopy tensors to `d`, counted with `writer`.
  void UseKernelCopies(const ConvertOptions::DirectOutput* d,
                       stream::container::HrryWriter* writer) {
    direct_ = d;
    writer_ = writer;
  }
  uint64_t kernel_copied_bytes() const { return copied_; }

 private:
  // safetensors BOOL: one byte (0 or 1) per element → bits, LSB first
  // (element-types.md § Boolean Type), the last byte's unused bits zero.
  absl::Status Bools(const Plan& p, stream::container::ByteSink out) {
    const uint64_t step = chunk_bytes_ / 8 * 8;
    for (uint64_t done = 0; done < p.elements;) {
      const size_t n =
          static_cast<size_t>(std::min<uint64_t>(step, p.elements - done));
      absl::Status s = ReadChunk(p.begin + done, n);
      if (!s.ok()) return s;
      out_.assign((n + 7) / 8, 0);
      for (size_t i = 0; i < n; ++i) {
        if (in_[i] > 1)
          return absl::InvalidArgumentError(absl::StrCat(
              "BOOL element ", done + i, " is ", in_[i], ", not 0 or 1"));
        out_[i / 8] |= static_cast<uint8_t>(in_[i] << (i % 8));
      }
      s = out(out_);
      if (!s.ok()) return s;
      done += n;
    }
    return absl::OkStatus();
  }

  // float8_e8m0 elements 0x00 and 0xFF are refused (TYPE-PACK-05).
  absl::Status E8M0(const Plan& p, stream::container::ByteSink out) {
    for (uint64_t done = 0; done < p.source_bytes;) {
      const size_t n = static_cast<size_t>(
          std::min<uint64_t>(chunk_bytes_, p.source_bytes - done));
      absl::Status s = ReadChunk(p.begin + done, n);
      if (!s.ok()) return s;
      for (size_t i = 0; i < n; ++i) {
        if (in_[i] == 0x00 || in_[i] == 0xFF)
          return absl::InvalidArgumentError(absl::StrCat(
              "F8_E8M0 element ", done + i, " is 0x", in_[i] == 0 ? "00" : "FF",
              ", which Hurray's float8_e8m0 reserves (TYPE-PACK-05)"));
      }
      s = out(in_);
      if (!s.ok()) return s;
      done += n;
    }
    return absl::OkStatus();
  }

  // Buffer 0: the codes of every block; buffer 1: the scales. The codes
  // pass also keeps the scales (ConvertOptions::scale_spool_bytes), so a
  // tensor is read once; a tensor with more scales than that is read again
  // for them.
  absl::Status Blocks(const Plan& p, uint32_t buffer,
                      stream::container::ByteSink out) {
    const GgmlBlockType type = BlockType(p.kind);
    const uint32_t in_bytes = SourceBlockBytes(type);
    const uint32_t scale_bytes = ScaleBytes(type);
    const uint32_t part_bytes = buffer == 0 ? CodeBytes(type) : scale_bytes;
    const uint64_t blocks = p.elements / SourceBlockElements(type);
    if (buffer == 1 && spooled_for_ == &p) {
      spooled_for_ = nullptr;
      return out(spool_);
    }
    spooled_for_ = nullptr;
    const bool spool = buffer == 0 && blocks <= spool_bytes_ / scale_bytes;
    if (spool) spool_.resize(static_cast<size_t>(blocks * scale_bytes));
    const uint64_t per_chunk = std::max<uint64_t>(1, chunk_bytes_ / in_bytes);
    std::string why;
    // Chunk i: read and rewritten (on the pipeline's worker, chunk_pipeline.h).
    auto make = [&](uint64_t i, std::vector<uint8_t>* o) -> absl::Status {
      const uint64_t b = i * per_chunk;
      const uint64_t n = std::min<uint64_t>(per_chunk, blocks - b);
      absl::Status s =
          ReadChunk(p.begin + b * in_bytes, static_cast<size_t>(n * in_bytes));
      if (!s.ok()) return s;
      o->resize(static_cast<size_t>(n * part_bytes));
      uint8_t* codes = buffer == 0 ? o->data() : nullptr;
      uint8_t* scales = buffer == 1 ? o->data()
                        : spool     ? spool_.data() + b * scale_bytes
                                    : nullptr;
      const uint64_t done =
          RewriteBlocks(type, in_.data(), n, codes, scales, &why);
      if (done != n)
        return absl::InvalidArgumentError(
            absl::StrCat(p.source_type, " block ", b + done, ": ", why));
      return absl::OkStatus();
    };
    absl::Status s = RunChunks((blocks + per_chunk - 1) / per_chunk, threaded_,
                               make, out, &out_);
    if (!s.ok()) return s;
    if (spool) spooled_for_ = &p;
    return absl::OkStatus();
  }

  // Q4_K / Q5_K / Q2_K: buffer 0 codes, 1 scales, 2 zero points. The codes
  // pass measures the error against ggml's values and keeps the scales and
  // zero points (5 bytes per sub-block: the zero points fit in a byte) when
  // they fit in scale_spool_bytes, so the tensor is read once; otherwise
  // each parameter buffer reads it again, decoding only the blocks'
  // headers.
 public:
  const KMinError& kmin_error() const { return kmin_error_; }

 private:
  absl::Status KMin(const Plan& p, uint32_t buffer,
                    stream::container::ByteSink out) {
    const KMinType type = KMinOf(p.kind);
    const uint32_t in_bytes = KMinSourceBytes(type);
    const uint32_t subs = KMinSubBlocks(type);
    const uint64_t blocks = p.elements / 256;
    const uint64_t per_chunk = std::max<uint64_t>(1, chunk_bytes_ / in_bytes);
    if (buffer > 0 && spooled_for_ == &p) {
      if (buffer == 1) return out(spool_);
      spooled_for_ = nullptr;
      // int32 zero points from the bytes kept, a chunk at a time.
      const uint64_t total = blocks * subs;
      for (uint64_t b = 0; b < total;) {
        const uint64_t n = std::min<uint64_t>(per_chunk * subs, total - b);
        out_.assign(static_cast<size_t>(4 * n), 0);
        for (uint64_t i = 0; i < n; ++i) out_[4 * i] = spool_zp_[b + i];
        absl::Status s = out(out_);
        if (!s.ok()) return s;
        b += n;
      }
      return absl::OkStatus();
    }
    spooled_for_ = nullptr;
    if (buffer == 0) kmin_error_ = KMinError();
    const bool spool = buffer == 0 && blocks <= spool_bytes_ / (5 * subs);
    if (spool) {
      spool_.resize(static_cast<size_t>(blocks * subs * 4));
      spool_zp_.resize(static_cast<size_t>(blocks * subs));
    }
    const uint32_t part_bytes =
        buffer == 0 ? KMinCodeBytes(type, p.compact) : 4 * subs;
    std::string why;
    // Chunk i: read and rewritten (on the pipeline's worker, chunk_pipeline.h)
    // in chunk order, so the error sums add up in the serial loop's order.
    auto make = [&](uint64_t i, std::vector<uint8_t>* out_bytes) {
      const uint64_t b = i * per_chunk;
      const uint64_t n = std::min<uint64_t>(per_chunk, blocks - b);
      absl::Status s =
          ReadChunk(p.begin + b * in_bytes, static_cast<size_t>(n * in_bytes));
      if (!s.ok()) return s;
      out_bytes->resize(static_cast<size_t>(n * part_bytes));
      KMinOutput o;
      if (buffer == 0) o.codes = out_bytes->data();
      if (buffer == 1) o.scales = out_bytes->data();
      if (buffer == 2) o.zero_points = out_bytes->data();
      if (spool) {
        o.scales = spool_.data() + b * subs * 4;
        o.zero_bytes = spool_zp_.data() + b * subs;
      }
      const uint64_t done =
          RewriteKMinBlocks(type, p.compact, in_.data(), n, o,
                            buffer == 0 ? &kmin_error_ : nullptr, &why);
      if (done != n)
        return absl::InvalidArgumentError(
            absl::StrCat(p.source_type, " block ", b + done, ": ", why));
      return absl::OkStatus();
    };
    absl::Status s = RunChunks((blocks + per_chunk - 1) / per_chunk, threaded_,
                               make, out, &out_);
    if (!s.ok()) return s;
    if (spool) spooled_for_ = &p;
    return absl::OkStatus();
  }

  const ByteSource& source_;
  size_t chunk_bytes_;
  uint64_t spool_bytes_;
  bool threaded_;  // ConvertOptions::rewrite_thread
  const ConvertOptions::DirectOutput* direct_ = nullptr;
  stream::container::HrryWriter* writer_ = nullptr;
  bool kernel_off_ = false;  // the output takes no kernel copies
  uint64_t copied_ = 0;
  KMinError kmin_error_;
  std::vector<uint8_t> spool_zp_;
  std::vector<uint8_t> in_, out_;
  // The scales kept by the codes pass of `spooled_for_`'s tensor.
  std::vector<uint8_t> spool_;
  const Plan* spooled_for_ = nullptr;
};

}  // namespace

ImportFormat DetectFormat(const ByteSource& source) {
  uint8_t prefix[9] = {};
  const size_t n = static_cast<size_t>(std::min<uint64_t>(9, source.size()));
  if (!source.ReadAt(0, absl::MakeSpan(prefix, n), "the magic").ok())
    return ImportFormat::kUnknown;
  if (LooksLikeGguf(absl::MakeConstSpan(prefix, n))) return ImportFormat::kGguf;
  if (LooksLikeSafetensors(absl::MakeConstSpan(prefix, n)))
    return ImportFormat::kSafetensors;
  return ImportFormat::kUnknown;
}

bool IsValidDataAlignment(uint64_t a) {
  return (a & (a - 1)) == 0 && a >= stream::container::kMinDataAlignment &&
         a <= stream::container::kMaxDataAlignment;
}

absl::StatusOr<ConvertReport> Convert(const ByteSource& source,
                                      const ConvertOptions& options,
                                      stream::container::ByteSink sink) {
  if (!IsValidDataAlignment(options.data_buffer_alignment))
    return absl::InvalidArgumentError(absl::StrCat(
        "data_buffer_alignment ", options.data_buffer_alignment,
        " is not a power of two from 4096 to 2097152 (FILE-HDR-07)"));
  ConvertReport report;
  const uint64_t max_metadata = options.reader.max_metadata_bytes;
  std::vector<Plan> plans;
  absl::flat_hash_set<std::string> user_keys, replaced;
  for (const auto& [k, v] : options.kv) user_keys.insert(k);
  stream::container::KvBuilder kv;
  absl::Status s;
  switch (DetectFormat(source)) {
    case ImportFormat::kSafetensors: {
      report.format = "safetensors";
      absl::StatusOr<SafetensorsFile> f =
          ReadSafetensorsHeader(source, options.safetensors);
      if (!f.ok()) return f.status();
      absl::StatusOr<std::vector<Plan>> p = PlanSafetensors(*f);
      if (!p.ok()) return p.status();
      plans = *std::move(p);
      for (const auto& [k, v] : f->metadata) {
        if (user_keys.contains(k)) continue;
        const std::string what =
            absl::StrCat("__metadata__ '", ShortName(k), "'");
        s = kv.AddString(k, v);
        if (!s.ok())
          return absl::Status(s.code(), absl::StrCat(what, ": ", s.message()));
        // At the JSON header (byte 8): the entry's own place is not kept.
        s = CheckTail(TailBytes(kv.encoded_size(), kIndexHeaderBytes),
                      max_metadata, 8, what);
        if (!s.ok()) return s;
      }
      break;
    }
    case ImportFormat::kGguf: {
      report.format = "gguf";
      GgufLimits limits = options.gguf;
      limits.max_metadata_bytes =
          std::min(limits.max_metadata_bytes, max_metadata);
      // Each pair goes to the KV section as it is read: the pairs are never
      // all held twice.
      absl::StatusOr<GgufFile> f =
          ReadGgufHeader(source, limits, [&](GgufKv& e) -> absl::Status {
            const std::string what =
                absl::StrCat("GGUF key '", ShortName(e.key), "'");
            // Duplicates: KvBuilder refuses those it is given; a key --kv
            // replaces is checked here.
            if (user_keys.contains(e.key)) {
              if (replaced.insert(e.key).second) return absl::OkStatus();
              return absl::InvalidArgumentError(absl::StrCat(
                  "GGUF: ", what, " at byte ", e.offset, ": duplicate key"));
            }
            absl::Status added = AddGgufKv(e, &kv);
            if (!added.ok())
              return absl::Status(added.code(),
                                  absl::StrCat(what, ": ", added.message()));
            return CheckTail(TailBytes(kv.encoded_size(), kIndexHeaderBytes),
                             max_metadata, e.offset, what);
          });
      if (!f.ok()) return f.status();
      absl::StatusOr<std::vector<Plan>> p = PlanGguf(*f);
      if (!p.ok()) return p.status();
      plans = *std::move(p);
      for (Plan& q : plans) {
        if (!IsKMin(q.kind) || !options.kquant_compact) continue;
        q.compact = true;
        const uint32_t bits = KMinCodeBits(KMinOf(q.kind), true);
        q.type_tag = bits == 4   ? type_tag::kUInt4
                     : bits == 2 ? type_tag::kUInt2
                                 : type_tag::kUInt8;
      }
      break;
    }
    default:
      return absl::InvalidArgumentError(
          "the input is neither safetensors (byte 8 is '{') nor GGUF "
          "(magic \"GGUF\")");
  }
  for (const auto& [k, v] : options.kv) {
    const std::string what = absl::StrCat("--kv '", ShortName(k), "'");
    s = kv.AddString(k, v);
    if (!s.ok())
      return absl::Status(s.code(), absl::StrCat(what, ": ", s.message()));
    s = CheckTail(TailBytes(kv.encoded_size(), kIndexHeaderBytes), max_metadata,
                  0, what);
    if (!s.ok()) return s;
  }
  s = ChooseQuantized(options, &plans);
  if (!s.ok()) return s;
  // Every descriptor, name and buffer is checked against the reader before
  // a byte is written, and the whole tail (KV section, index, trailer).
  auto d = std::make_unique<TensorDescriptor>();
  const uint64_t kv_bytes = kv.empty() ? 0 : kv.encoded_size();
  uint64_t index_bytes = kIndexHeaderBytes;
  // Every byte of the output but its zero padding (report.padding_bytes).
  uint64_t payload = stream::container::kFileHeaderSize + kv_bytes +
                     stream::container::kTrailerSize;
  {
    DescriptorDecoder decoder{options.reader.parse};
    for (const Plan& p : plans) {
      if (p.kind == Kind::kQuantize) {
        s = Quantizer(p.spec, p.shape, nullptr, 0).Describe(d.get());
      } else {
        s = Describe(p, d.get());
      }
      absl::StatusOr<std::vector<uint8_t>> encoded;
      if (s.ok()) {
        encoded = stream::container::EncodeChecked(*d, {}, &decoder);
        s = encoded.status();
      }
      if (!s.ok()) return ForTensor(p.name, s);
      payload += encoded->size();
      for (uint32_t i = 0; i < d->buffer_count; ++i) {
        payload += d->buffers[i].byte_size;
        if (d->buffers[i].byte_size > options.reader.limits.max_buffer_bytes) {
          const std::string m =
              absl::StrCat("tensor '", ShortName(p.name), "': buffer ", i,
                           " would hold ", d->buffers[i].byte_size,
                           " bytes, above the .hrry reader's "
                           "limit of ",
                           options.reader.limits.max_buffer_bytes);
          return ToStatus(
              Rejection{Rule::kLimitBufferBytes, p.begin, m.c_str()});
        }
      }
      // file-format.md § Index Encoding (the writer would refuse it after
      // the tensors before it are written).
      if (p.name.empty() || p.name.size() > 0xFFFF ||
          !stream::container::IsValidUtf8(p.name))
        return ForTensor(ShortName(p.name),
                         absl::InvalidArgumentError(
                             "tensor names hold 1 to 65535 bytes of UTF-8"));
      index_bytes += IndexEntryBytes(p.name.size());
      s = CheckTail(TailBytes(kv_bytes, index_bytes), max_metadata, p.begin,
                    absl::StrCat("tensor '", ShortName(p.name), "'"));
      if (!s.ok()) return s;
    }
  }
  stream::container::HrryWriterOptions wo;
  wo.parse = options.reader.parse;
  wo.data_buffer_alignment = options.data_buffer_alignment;
  wo.sorted_index = true;
  wo.with_kv = !kv.empty();
  wo.tensor_count_hint = plans.size();
  stream::container::HrryWriter writer(wo);
  s = writer.Begin(sink);
  if (!s.ok()) return s;
  TensorStreamer streamer(source, options.chunk_bytes,
                          options.scale_spool_bytes, options.rewrite_thread);
  streamer.UseKernelCopies(&options.direct_output, &writer);
  for (const Plan& p : plans) {
    ConvertedTensor c;
    if (p.kind == Kind::kQuantize) {
      SourceRows rows(source, p);
      Quantizer q(p.spec, p.shape, &rows, options.chunk_bytes);
      s = q.Prepare();
      if (s.ok()) s = q.Describe(d.get());
      if (s.ok()) {
        s = writer.AddStreamed(
            p.name, *d,
            [&q](uint32_t i, stream::container::ByteSink out) {
              return q.WriteBuffer(i, out);
            },
            sink);
      }
      c.quantized = true;
      c.exact = false;
      c.max_abs_error = q.max_abs_error();
      c.rms_error = q.rms_error();
    } else {
      s = Describe(p, d.get());
      if (s.ok()) {
        s = writer.AddStreamed(
            p.name, *d,
            [&](uint32_t i, stream::container::ByteSink out) {
              return streamer.Write(p, i, out);
            },
            sink);
      }
    }
    if (!s.ok()) return ForTensor(p.name, s);
    c.name = p.name;
    c.source_type = p.source_type;
    c.hurray_type = std::string(ElementTypeName(d->type_tag));
    c.scheme = d->has(flag::kHasQuantization)
                   ? SchemeName(d->quantization.scheme_tag)
                   : "";
    c.shape = p.shape;
    c.note = p.note;
    if (IsKMin(p.kind)) {
      // Near-lossless (ggml_kmin.h): the error against ggml's values.
      const KMinError& e = streamer.kmin_error();
      c.exact = false;
      c.max_abs_error = e.max_abs;
      c.rms_error =
          e.count == 0 ? 0 : std::sqrt(e.sum_sq / static_cast<double>(e.count));
      const KMinType type = KMinOf(p.kind);
      if (KMinCodeBits(type, p.compact) == 8 &&
          e.min_step_bits < (type == KMinType::kQ2_K   ? 6
                             : type == KMinType::kQ4_K ? 4
                                                       : 3))
        c.note = absl::StrCat("a sub-block on a coarser step: 1/2^",
                              e.min_step_bits, " of ggml's");
    }
    ++report.tensor_count;
    if (options.on_tensor) {
      options.on_tensor(c);
    } else {
      report.tensors.push_back(std::move(c));
    }
  }
  // The plans are done with: freed before the writer encodes its index.
  std::vector<Plan>().swap(plans);
  report.kv_entries = kv.count();
  // The builder's entries go to the writer's KV section.
  writer.kv() = std::move(kv);
  s = writer.Finish(sink);
  if (!s.ok()) return s;
  report.bytes_written = writer.bytes_written();
  report.kernel_copied_bytes = streamer.kernel_copied_bytes();
  payload += index_bytes;
  report.padding_bytes =
      report.bytes_written > payload ? report.bytes_written - payload : 0;
  return report;
}

}  // namespace hurray::stream::convert
