#include "stream/ingest/sparse_writer.h"

#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "dequant/params.h"
#include "parser/element_type.h"
#include "parser/rules.h"
#include "parser/wire.h"
#include "stream/container/crc32c.h"
#include "stream/ingest/output/npy.h"
#include "stream/ingest/output/sparse_dequant.h"
#include "stream/ingest/output/sparse_walk.h"
#include "stream/ingest/output_naming.h"
#include "stream/ingest/values_buffer.h"

namespace hurray::stream::ingest {

absl::Status SparseWriter::Begin(std::string* none) {
  const TensorDescriptor& d = desc_;
  const DequantSinkOptions& o = *ctx_.options;
  // The parameter buffers of a quantized tensor follow the layout's: the
  // values and the index buffers.
  const uint32_t layout_buffers = d.layout_tag == layout_tag::kCoo ? 2
                                  : d.layout_tag == layout_tag::kCsf
                                      ? 2 * d.rank + 1
                                      : 3;
  HURRAY_RETURN_IF_ERROR(CheckParameters(layout_buffers));
  uint64_t count = 0, dense = 0;
  const uint64_t width = out_type_.bytes() * (out_type_.pairs ? 2 : 1);
  const bool fits = d.ElementCount(&count) &&
                    wire::CheckedMul(count, width, &dense) &&
                    dense <= o.max_dense_bytes;
  // Kept as its arrays: asked for, or too large to write dense.
  keep_ = o.sparse == SparseOutput::kKeep || !fits;
  if (keep_ && ctx_.values != nullptr) {
    // Values for the observer (WriterContext::values) are the dense ones.
    *none = absl::StrCat("no output: the dense form is over ",
                         o.max_dense_bytes, " bytes (max_dense_bytes)");
    keep_ = false;
    return absl::OkStatus();
  }
  if (keep_) {
    // Values first: "<name>.values", then the index arrays (KeepArrays).
    final_name_ = absl::StrCat(base_, ".values", OutputSuffix(o.format));
    if (!wire::CheckedMul(d.layout.nnz, width, &dense)) {
      *none = "no output: the values' size overflows";
      keep_ = false;
      return absl::OkStatus();
    }
  }
  dense_bytes_ = dense;
  conv_.emplace(quantized_ ? type_tag::kFloat32 : d.type_tag, out_type_,
                d.layout.nnz);
  absl::Status s = OpenSpools();
  if (!s.ok()) return s;
  if (keep_) return absl::OkStatus();  // the outputs open at the end
  return out_.Open(name_, out_type_, OutputShape(d, out_type_));
}

absl::Status SparseWriter::Finish(WriterResult* result) {
  if (keep_) return KeepArrays(result);
  absl::Status s = Densify(&result->verdict, /*by_value=*/false);
  if (!s.ok() || no_output_) return s;
  return out_.Close(result);
}

// The values converted (dequantized) in stored order as the main output
// "<name>.values", then each index array as it is stored (uint64) in
// result->more. The index is walked first: a broken one (permissive input)
// leaves nothing.
absl::Status SparseWriter::KeepArrays(WriterResult* result) {
  std::string* verdict = &result->verdict;
  std::vector<std::unique_ptr<Mapping>> maps;
  std::vector<absl::Span<const uint8_t>> views;
  absl::Status s = spools_.View(&maps, &views);
  if (s.ok()) {
    uint64_t seen = 0;
    s = ForEachSparseElement(desc_, views, [&](uint64_t, uint64_t) {
      if (++seen % (uint64_t{1} << 18) == 0) ReleaseAll(maps);
    });
  }
  if (!s.ok()) {
    if (s.code() != absl::StatusCode::kInvalidArgument) return s;
    NoOutputAtEnd(verdict, s.message());
    spools_.Drop();
    return absl::OkStatus();
  }
  const uint64_t nnz = desc_.layout.nnz;
  std::vector<uint64_t> shape = {nnz};
  if (out_type_.pairs) shape.push_back(2);
  s = out_.Open(name_ + ".values", out_type_, shape);
  if (s.ok() && out_.in_safetensors()) late_entries_.push_back(".values");
  if (s.ok()) s = Densify(verdict, /*by_value=*/true);
  if (!s.ok() || no_output_) {
    spools_.Drop();
    return s;
  }
  s = out_.Close(result);
  if (!s.ok()) return s;
  for (const KeptArray& a : KeptArrays(desc_)) {
    if (a.buffer >= views.size()) continue;
    // Whole entries (rows) only: the header's shape holds every byte.
    std::vector<uint64_t> ashape = {views[a.buffer].size() / 8 / a.columns};
    if (a.columns > 1) ashape.push_back(a.columns);
    const absl::Span<const uint8_t> bytes =
        views[a.buffer].first(static_cast<size_t>(ashape[0] * a.columns * 8));
    s = WritePart(a.suffix, bytes, ashape, &maps, &result->more);
    if (!s.ok()) break;
  }
  maps.clear();
  spools_.Drop();
  if (!s.ok()) return s;
  *verdict =
      absl::StrCat("kept sparse (", nnz, " values and ", result->more.size(),
                   " index arrays, shape ", ShapeText(desc_), ")");
  return absl::OkStatus();
}

// One index array (little-endian uint64) as its own output.
absl::Status SparseWriter::WritePart(
    const std::string& suffix, absl::Span<const uint8_t> bytes,
    const std::vector<uint64_t>& shape,
    std::vector<std::unique_ptr<Mapping>>* maps, std::vector<KeptPart>* more) {
  if (!ctx_.options->write_files) return absl::OkStatus();
  container::SafeOutputDir* dir = ctx_.dir;
  SafetensorsWriter* st = ctx_.safetensors;
  if (st != nullptr) {
    absl::Status s = st->BeginTensor(name_ + suffix, "U64", shape);
    for (size_t at = 0; s.ok() && at < bytes.size(); at += kSpoolReadBytes) {
      s = st->Append(bytes.subspan(at, kSpoolReadBytes));
      ReleaseAll(*maps);
    }
    if (!s.ok()) {
      st->AbandonTensor();
      return s;
    }
    st->EndTensor();
    late_entries_.push_back(suffix);
    return absl::OkStatus();
  }
  absl::StatusOr<container::TempFile> t = dir->CreateTemp(0644);
  if (!t.ok()) return t.status();
  more->push_back(KeptPart{suffix, t->name, 0});
  KeptPart& part = more->back();
  absl::Status s = absl::OkStatus();
  if (ctx_.options->format == OutputFormat::kNpy) {
    const std::string h = NpyHeader("<u8", shape);
    part.crc = container::Crc32cExtend(
        0, absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(h.data()),
                               h.size()));
    s = container::WriteAllFd(t->fd, h.data(), h.size(),
                              dir->Describe(t->name));
  }
  for (size_t at = 0; s.ok() && at < bytes.size(); at += kSpoolReadBytes) {
    const absl::Span<const uint8_t> c = bytes.subspan(at, kSpoolReadBytes);
    part.crc = container::Crc32cExtend(part.crc, c);
    s = container::WriteAllFd(t->fd, c.data(), c.size(),
                              dir->Describe(t->name));
    ReleaseAll(*maps);
  }
  if (::close(t->fd) != 0 && s.ok()) {
    s = ErrnoStatus("cannot write", dir->Describe(t->name));
  }
  return s;
}

// One float as the output type (quantized outputs: float32, float16 or
// bfloat16, ChooseOutput), little-endian.
void SparseWriter::StoreFloat(float f, uint8_t* to) const {
  switch (out_type_.tag) {
    case type_tag::kFloat16:
      wire::StoreU16(to, DoubleToF16Bits(f));
      return;
    case type_tag::kBFloat16:
      wire::StoreU16(to, DoubleToBf16Bits(f));
      return;
    default:
      wire::StoreF32(to, f);
  }
}

// The values converted to the output type, then each stored element
// copied to its row-major place in a zero-filled file (the output after
// its header, or a temp for safetensors), mapped shared. by_value: each
// stored element at its value index instead of its position (a kept sparse
// tensor's values, dequantized or converted).
absl::Status SparseWriter::Densify(std::string* verdict, bool by_value) {
  container::SafeOutputDir* dir = ctx_.dir;
  std::vector<std::unique_ptr<Mapping>> maps;
  std::vector<absl::Span<const uint8_t>> views;
  {
    absl::Status s = spools_.View(&maps, &views);
    if (!s.ok()) return s;
  }
  // Converted values: a spool of their own. Quantized values are
  // dequantized at their positions instead (SparseDequantizer).
  const uint64_t nnz = desc_.layout.nnz;
  const uint32_t width = conv_->out_bytes_per_element();
  std::optional<SparseDequantizer> deq;
  if (quantized_) {
    absl::StatusOr<dequant::ParameterBytes> pb =
        dequant::ParametersFromBuffers(desc_, views);
    absl::StatusOr<SparseDequantizer> q =
        pb.ok() ? SparseDequantizer::Create(desc_, *pb, ctx_.options->mode)
                : absl::StatusOr<SparseDequantizer>(pb.status());
    if (!q.ok()) {
      if (RuleIdOf(q.status()).has_value()) return q.status();
      NoOutputAtEnd(verdict, q.status().message());
      spools_.Drop();
      return absl::OkStatus();
    }
    deq.emplace(*std::move(q));
  }
  BufferSpool values;
  uint64_t budget = ctx_.options->spool_memory_bytes;
  absl::Status s =
      OpenSpool(dir, &values, quantized_ ? 0 : nnz * width, &budget);
  std::vector<uint8_t> chunk;
  for (size_t at = 0; !quantized_ && s.ok() && at < views[0].size();
       at += kSubPiece) {
    chunk.clear();
    conv_->Feed(views[0].subspan(at, kSubPiece), &chunk);
    s = AppendSpool(dir, &values, chunk);
    if ((at + kSubPiece) % kReleaseBytes == 0) ReleaseAll(maps);
  }
  if (s.ok() && !quantized_ && conv_->done() < nnz) {
    s = absl::DataLossError("the values buffer is shorter than nnz");
  }
  if (s.ok() && quantized_ &&
      views[0].size() * 8 / std::max<uint32_t>(desc_.ElementBits(), 1) < nnz) {
    s = absl::DataLossError("the values buffer is shorter than nnz");
  }
  Mapping values_map;
  const uint8_t* vals = values.mem.data();
  if (s.ok() && values.file.fd >= 0) {
    s = values_map.Map(values.file.fd, values.size, false);
    vals = values_map.data();
  }
  // The dense file.
  container::TempFile dense;
  uint64_t header = 0;
  if (s.ok() && ctx_.options->write_files) {
    if (out_.in_safetensors()) {
      absl::StatusOr<container::TempFile> t = dir->CreateTemp(0600);
      if (t.ok()) dense = *t;
      s = t.status();
    } else {
      header = out_.buffer().size();
      s = out_.Sync();
      dense.fd = out_.fd();
    }
  }
  Mapping out_map;
  // In memory (WriterContext::values): the buffer, zero-filled.
  uint8_t* in_memory = nullptr;
  if (s.ok() && out_.in_memory()) in_memory = ctx_.values->ZeroFilled().data();
  if (s.ok() && dense.fd >= 0) {
    if (::ftruncate(dense.fd, static_cast<off_t>(header + dense_bytes_)) != 0) {
      s = ErrnoStatus("cannot size", dir->Describe(out_.temp()));
    } else {
      s = out_map.Map(dense.fd, header + dense_bytes_, true);
    }
  }
  uint64_t placed = 0;
  if (s.ok()) {
    uint8_t* out =
        out_map.data() == nullptr ? in_memory : out_map.data() + header;
    s = ForEachSparseElement(
        desc_, views, [&](uint64_t value, uint64_t position) {
          const uint64_t at = by_value ? value : position;
          if (out != nullptr && deq.has_value()) {
            StoreFloat(deq->Value(views[0], value, position), out + at * width);
          } else if (out != nullptr) {
            std::memcpy(out + at * width, vals + value * width, width);
          }
          if (++placed % (uint64_t{1} << 18) == 0) {
            out_map.Release();
            values_map.Release();
            ReleaseAll(maps);
          }
        });
  }
  if (s.ok() && out_.in_safetensors() && dense.fd >= 0) {
    const absl::Span<const uint8_t> all(out_map.data(),
                                        static_cast<size_t>(dense_bytes_));
    for (size_t at = 0; s.ok() && at < all.size(); at += kSpoolReadBytes) {
      s = ctx_.safetensors->Append(all.subspan(at, kSpoolReadBytes));
      out_map.Release();
    }
  }
  out_map.Reset();
  if (out_.in_safetensors() && dense.fd >= 0) {
    ::close(dense.fd);
    dir->Remove(dense.name);
  }
  values_map.Reset();
  DropSpool(dir, &values);
  maps.clear();
  if (!by_value) spools_.Drop();
  if (!s.ok()) {
    // A broken index (permissive input) leaves no output, not a failure.
    if (s.code() != absl::StatusCode::kInvalidArgument) return s;
    NoOutputAtEnd(verdict, s.message());
    return absl::OkStatus();
  }
  if (!out_.in_safetensors() && dense.fd >= 0) {
    absl::StatusOr<uint32_t> crc = FileCrc32c(*dir, out_.temp());
    if (!crc.ok()) return crc.status();
    out_.set_crc(*crc);
  }
  *verdict = absl::StrCat("densified (", placed, " stored values)");
  return absl::OkStatus();
}

}  // namespace hurray::stream::ingest
