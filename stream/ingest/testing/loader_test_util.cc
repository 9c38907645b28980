#include "stream/ingest/testing/loader_test_util.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>

#include "absl/strings/str_cat.h"
#include "dequant/dequantizer.h"
#include "dequant/minifloat.h"
#include "parser/decoder.h"
#include "parser/descriptor.h"
#include "parser/element_type.h"
#include "parser/encoder.h"
#include "parser/wire.h"
#include "stream/container/stream_writer.h"

namespace hurray::stream::ingest::testing {
namespace {

using dequant::Scheme;
using dequant::testing::TensorSpec;

std::vector<uint8_t> Floats(const std::vector<float>& f) {
  std::vector<uint8_t> out(f.size() * 4);
  for (size_t i = 0; i < f.size(); ++i) wire::StoreF32(&out[4 * i], f[i]);
  return out;
}

IngestTensor Quantized(const std::string& name, const TensorSpec& spec,
                       std::mt19937_64& rng) {
  IngestTensor t;
  t.name = name;
  t.tensor = dequant::testing::MakeTensor(spec, rng);
  std::vector<float> out;
  const absl::Status s = dequant::DequantizeAll(
      *t.tensor.descriptor, t.tensor.data(), t.tensor.params(), &out);
  if (!s.ok()) std::abort();
  t.expected = Floats(out);
  return t;
}

// A plain row-major tensor of `type` with `count` elements.
IngestTensor Plain(const std::string& name, uint8_t type, uint64_t count,
                   std::mt19937_64& rng) {
  IngestTensor t;
  t.name = name;
  auto d = std::make_unique<TensorDescriptor>();
  // Borrow a valid descriptor and strip its quantization.
  TensorSpec spec;
  spec.scheme = Scheme::kPerTensorAffine;
  spec.storage_type = type_tag::kInt8;
  spec.shape = {count};
  t.tensor = dequant::testing::MakeTensor(spec, rng);
  TensorDescriptor& desc = *t.tensor.descriptor;
  desc.flags &= ~flag::kHasQuantization;
  desc.quantization = QuantizationDescriptor();
  desc.type_tag = type;
  const uint32_t width = type == type_tag::kFloat16 ? 2 : 4;
  desc.buffers[0].byte_size = count * width;
  std::vector<uint8_t>& data = t.tensor.buffers[0];
  data.resize(count * width);
  std::vector<float> ref(count);
  for (uint64_t i = 0; i < count; ++i) {
    if (type == type_tag::kFloat16) {
      const uint16_t bits = static_cast<uint16_t>(rng() & 0x7BFF);
      wire::StoreU16(&data[2 * i], bits);
      ref[i] = dequant::F16ToF32(bits);
    } else {
      const uint32_t bits = static_cast<uint32_t>(rng());
      wire::StoreU32(&data[4 * i], bits);
      std::memcpy(&ref[i], &bits, 4);
      if (type == type_tag::kInt32) {
        ref[i] = static_cast<float>(static_cast<int32_t>(bits));
      }
    }
  }
  t.expected = Floats(ref);
  if (type == type_tag::kFloat32) t.expected = data;  // bit-exact copy
  // Re-encode to refresh descriptor_length and offsets.
  absl::StatusOr<std::vector<uint8_t>> wire = Encode(desc);
  if (!wire.ok()) std::abort();
  absl::StatusOr<TensorDescriptor> back = Decode(*wire);
  if (!back.ok()) std::abort();
  *t.tensor.descriptor = *back;
  return t;
}

}  // namespace

std::vector<IngestTensor> MixedTensors(uint32_t seed, uint64_t scale) {
  std::mt19937_64 rng(seed);
  std::vector<IngestTensor> out;
  TensorSpec s;
  s.scheme = Scheme::kPerTensorAffine;
  s.storage_type = type_tag::kInt8;
  s.shape = {6 * scale, 5};
  out.push_back(Quantized("embed/tokens", s, rng));
  s = TensorSpec();
  s.scheme = Scheme::kPerChannelAffine;
  s.storage_type = type_tag::kInt8;
  s.shape = {4, 33 * scale};
  s.axis = 0;
  out.push_back(Quantized("layers.0.q_proj", s, rng));
  out.push_back(Plain("norm.weight", type_tag::kFloat32, 17 * scale, rng));
  s = TensorSpec();
  s.scheme = Scheme::kPerBlockAffine;
  s.storage_type = type_tag::kInt4;
  s.shape = {3, 70 * scale};
  s.axis = 1;
  s.block_size = 32;
  out.push_back(Quantized("layers.0.k_proj", s, rng));
  out.push_back(Plain("bias", type_tag::kFloat16, 9 * scale, rng));
  s = TensorSpec();
  s.scheme = Scheme::kNf4;
  s.storage_type = type_tag::kUInt4;
  s.shape = {2, 64 * scale};
  s.axis = 1;
  s.block_size = 64;
  out.push_back(Quantized("../evil/name", s, rng));
  out.push_back(Plain("counts", type_tag::kInt32, 5, rng));
  return out;
}

std::vector<IngestTensor> LayoutTensors(uint32_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<IngestTensor> out;
  const uint8_t tags[] = {layout_tag::kColumnMajor, layout_tag::kStrided,
                          layout_tag::kTiled, layout_tag::kMorton};
  for (uint8_t tag : tags) {
    TensorSpec s;
    s.scheme = Scheme::kPerChannelAffine;
    s.storage_type = type_tag::kInt4;
    s.shape = {5, 7};
    s.axis = 1;
    s.layout = dequant::testing::RandomLayout(tag, s.shape, rng);
    out.push_back(Quantized(absl::StrCat("layout_", tag, "_int4"), s, rng));
    s = TensorSpec();
    s.scheme = Scheme::kMxfp;
    s.storage_type = type_tag::kFloat8E4M3;
    s.shape = {4, 64};
    s.axis = 1;
    s.block_size = 32;
    s.layout = dequant::testing::RandomLayout(tag, s.shape, rng);
    out.push_back(Quantized(absl::StrCat("layout_", tag, "_e4m3"), s, rng));
  }
  return out;
}

std::vector<IngestTensor> QuantizedTensors(uint32_t seed, size_t count,
                                           uint64_t bytes) {
  std::mt19937_64 rng(seed);
  std::vector<IngestTensor> out;
  for (size_t i = 0; i < count; ++i) {
    TensorSpec s;
    if (i % 2 == 0) {
      s.scheme = Scheme::kPerChannelAffine;
      s.storage_type = type_tag::kInt8;
      s.shape = {std::max<uint64_t>(bytes / 4096, 1), 4096};
    } else {
      s.scheme = Scheme::kPerBlockAffine;
      s.storage_type = type_tag::kInt4;
      s.shape = {std::max<uint64_t>(bytes / 2048, 1), 4096};
      s.axis = 1;
      s.block_size = 64;
      s.symmetric = true;
    }
    out.push_back(Quantized(absl::StrCat("t", i), s, rng));
  }
  return out;
}

namespace {

std::vector<uint8_t> U64s(const std::vector<uint64_t>& v) {
  std::vector<uint8_t> b(v.size() * 8);
  for (size_t i = 0; i < v.size(); ++i) wire::StoreU64(&b[8 * i], v[i]);
  return b;
}

IngestTensor Sparse2d(const std::string& name, uint8_t layout, uint64_t nnz,
                      std::vector<std::vector<uint8_t>> buffers) {
  auto d = std::make_unique<TensorDescriptor>();
  d->type_tag = type_tag::kInt16;
  d->layout_tag = layout;
  d->rank = 2;
  d->shape[0] = 3;
  d->shape[1] = 4;
  d->layout.nnz = nnz;
  if (layout == layout_tag::kCoo) d->layout.is_sorted = 1;
  d->buffer_count = static_cast<uint32_t>(buffers.size());
  for (uint32_t i = 0; i < d->buffer_count; ++i) {
    d->buffers[i].byte_size = buffers[i].size();
  }
  IngestTensor t;
  t.name = name;
  t.tensor.descriptor = std::move(d);
  t.tensor.buffers = std::move(buffers);
  return t;
}

}  // namespace

std::vector<IngestTensor> SparseTensors() {
  std::vector<IngestTensor> v;
  // (0, 1) 1, (1, 3) 2, (2, 0) -3.
  v.push_back(Sparse2d("coo", layout_tag::kCoo, 3,
                       {{1, 0, 2, 0, 0xFD, 0xFF}, U64s({0, 1, 1, 3, 2, 0})}));
  // (0, 1) 7, (2, 3) -3.
  v.push_back(Sparse2d("csr", layout_tag::kCsr, 2,
                       {{7, 0, 0xFD, 0xFF}, U64s({1, 3}), U64s({0, 1, 1, 2})}));
  return v;
}

std::vector<uint8_t> HrryBytes(const std::vector<IngestTensor>& tensors) {
  std::vector<uint8_t> bytes;
  auto sink = [&bytes](absl::Span<const uint8_t> b) {
    bytes.insert(bytes.end(), b.begin(), b.end());
    return absl::OkStatus();
  };
  container::HrryWriter w;
  if (!w.Begin(sink).ok()) std::abort();
  for (const IngestTensor& t : tensors) {
    std::vector<absl::Span<const uint8_t>> spans(t.tensor.buffers.begin(),
                                                 t.tensor.buffers.end());
    if (!w.Add(t.name, *t.tensor.descriptor, spans, sink).ok()) std::abort();
  }
  if (!w.Finish(sink).ok()) std::abort();
  return bytes;
}

std::vector<uint8_t> StreamBytes(const std::vector<IngestTensor>& tensors) {
  std::vector<uint8_t> bytes;
  auto sink = [&bytes](absl::Span<const uint8_t> b) {
    bytes.insert(bytes.end(), b.begin(), b.end());
    return absl::OkStatus();
  };
  container::StreamWriter w;
  for (const IngestTensor& t : tensors) {
    std::vector<absl::Span<const uint8_t>> spans(t.tensor.buffers.begin(),
                                                 t.tensor.buffers.end());
    if (!w.Write(*t.tensor.descriptor, spans, sink).ok()) std::abort();
  }
  return bytes;
}

absl::Status WriteHrryFile(const std::string& path,
                           const std::vector<IngestTensor>& tensors) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  container::OstreamSink sink(&out);
  container::HrryWriter w;
  absl::Status s = w.Begin(sink);
  for (const IngestTensor& t : tensors) {
    if (!s.ok()) return s;
    std::vector<absl::Span<const uint8_t>> spans(t.tensor.buffers.begin(),
                                                 t.tensor.buffers.end());
    s = w.Add(t.name, *t.tensor.descriptor, spans, sink);
  }
  if (s.ok()) s = w.Finish(sink);
  out.close();
  if (s.ok() && !out) return absl::DataLossError("cannot write " + path);
  return s;
}

std::vector<uint8_t> ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in),
                              std::istreambuf_iterator<char>());
}

void WriteAll(const std::string& path, absl::Span<const uint8_t> bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
}

std::vector<std::string> ListDir(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    names.push_back(e.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace hurray::stream::ingest::testing
