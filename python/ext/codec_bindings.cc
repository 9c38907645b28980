// Bindings of the descriptor layer: quantization sections, descriptors
// (encode, decode, validate), the incremental decoder and the dequantizer.
#include "python/ext/codec_bindings.h"

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "dequant/dequantizer.h"
#include "dequant/minifloat.h"
#include "dequant/params.h"
#include "parser/data_checks.h"
#include "parser/decoder.h"
#include "parser/element_type.h"
#include "parser/encoder.h"
#include "parser/rules.h"
#include "parser/validator.h"
#include "python/ext/buffers.h"
#include "python/ext/descriptor_dict.h"
#include "python/ext/errors.h"

namespace hurray::python {
namespace {

ParseOptions OptionsFor(bool permissive) {
  ParseOptions options;
  options.mode = permissive ? Mode::kPermissive : Mode::kStrict;
  return options;
}

py::bytes ToBytes(const std::vector<uint8_t>& v) {
  return py::bytes(reinterpret_cast<const char*>(v.data()), v.size());
}

// The quantization section of a per-scheme class, checked by the scheme's
// validating factory (QNT-* rule ids), then encoded.
py::bytes EncodeQuantization(const py::dict& fields) {
  const QuantizationDescriptor q = QuantizationFromDict(fields);
  const bool symmetric = q.symmetric();
  absl::Status status;
  switch (q.scheme_tag) {
    case scheme_tag::kPerTensorAffine:
      status = PerTensorAffine::Create(q.scale, q.zero_point).status();
      break;
    case scheme_tag::kPerChannelAffine:
      status = symmetric
                   ? PerChannelAffine::Symmetric(q.axis, q.scale_buffer_index)
                         .status()
                   : PerChannelAffine::Asymmetric(q.axis, q.scale_buffer_index,
                                                  q.zero_point_buffer_index)
                         .status();
      break;
    case scheme_tag::kPerBlockAffine:
      status = symmetric ? PerBlockAffine::Symmetric(q.axis, q.block_size,
                                                     q.scale_buffer_index,
                                                     q.scale_type_tag)
                               .status()
                         : PerBlockAffine::Asymmetric(
                               q.axis, q.block_size, q.scale_buffer_index,
                               q.zero_point_buffer_index, q.scale_type_tag)
                               .status();
      break;
    case scheme_tag::kNf4:
      status = Nf4::Create(q.axis, q.block_size, q.scale_buffer_index).status();
      break;
    case scheme_tag::kMxfp:
      status =
          Mxfp::Create(q.axis, q.block_size, q.scale_buffer_index).status();
      break;
    default:
      throw py::value_error("unknown quantization scheme tag");
  }
  ThrowIfError(status);
  // Every field the factories do not see (version, reserved bytes) is
  // checked by the section's own validation.
  ThrowIfError(ToStatus(CheckQuantizationFields(q, 0, ParseOptions())));
  return ToBytes(q.EncodeToVector());
}

py::tuple DecodeQuantizationSection(const py::buffer& bytes) {
  ByteView view(bytes);
  absl::StatusOr<DecodedQuantization> decoded = DecodeQuantization(view.span());
  ThrowIfError(decoded.status());
  return py::make_tuple(QuantizationToDict(decoded->descriptor),
                        decoded->consumed);
}

// What a tensor built in Python must satisfy when it is constructed: every
// descriptor rule (placement, shape, buffer sizes, ...) except the storage
// type NF4 requires (QNT-NF4-05): the user's documents build NF4 over int4,
// which has uint4's sizes, and an unagreed extension layout id (LAY-TAG-04).
// Writes and reads check those rules too.
void CheckConstruction(const py::dict& fields) {
  auto d = std::make_unique<TensorDescriptor>();
  DescriptorFromDict(fields, d.get());
  if (d->has(flag::kHasQuantization) &&
      d->quantization.scheme_tag == scheme_tag::kNf4 &&
      d->type_tag == type_tag::kInt4) {
    d->type_tag = type_tag::kUInt4;
  }
  absl::Status strict = Validate(*d);
  // A private extension layout's id is recognised only by a reader that
  // agreed on it (LAY-TAG-04, strict-only): it is built, and a strict
  // writer refuses it as a strict reader would; a permissive one writes it.
  if (RuleIdOf(strict) == "LAY-TAG-04") {
    strict = Validate(*d, OptionsFor(/*permissive=*/true));
  }
  ThrowIfError(strict);
}

// The data-level rules of a sparse or block-paged tensor's index buffers
// (parser/data_checks.h: bounds, pointer arrays, order), strict, checked
// whole over the buffers in memory, so Python never builds (and writers
// never write) what a strict reader's data checks refuse. `fields` passed
// CheckConstruction.
void CheckIndexData(const py::dict& fields, const py::sequence& buffers) {
  auto d = std::make_unique<TensorDescriptor>();
  DescriptorFromDict(fields, d.get());
  std::unique_ptr<IndexDataChecker> checker = MakeIndexChecker(*d);
  if (checker == nullptr) return;
  ByteViews views(buffers);
  std::vector<absl::Span<const uint8_t>> rest;
  for (size_t i = 0; i < views.spans().size() && i < d->buffer_count; ++i) {
    rest.push_back(views.spans()[i].first(
        std::min<uint64_t>(views.spans()[i].size(), d->buffers[i].byte_size)));
  }
  // FeedSome stops where the other buffer of a pair must go on: alternate.
  for (bool progress = true; progress;) {
    progress = false;
    for (size_t i = 0; i < rest.size(); ++i) {
      if (rest[i].empty()) continue;
      const DataFeedResult r =
          checker->FeedSome(static_cast<uint32_t>(i), rest[i]);
      ThrowIfError(ToStatus(r.rejection));
      rest[i].remove_prefix(r.consumed);
      progress = progress || r.consumed > 0;
    }
  }
  ThrowIfError(ToStatus(checker->Finish()));
}

// The strict encoding of a descriptor: validated as a reader would.
py::bytes EncodeDescriptor(const py::dict& fields, bool permissive) {
  auto d = std::make_unique<TensorDescriptor>();
  DescriptorFromDict(fields, d.get());
  ThrowIfError(Validate(*d, OptionsFor(permissive)));
  absl::StatusOr<std::vector<uint8_t>> wire = Encode(*d);
  ThrowIfError(wire.status());
  return ToBytes(*wire);
}

py::tuple DecodeDescriptor(const py::buffer& bytes, bool permissive) {
  ByteView view(bytes);
  auto decoder = std::make_unique<DescriptorDecoder>(OptionsFor(permissive));
  const Rejection r = DecodeWith(view.span(), decoder.get());
  ThrowIfError(ToStatus(r));
  return py::make_tuple(DescriptorToDict(decoder->descriptor()),
                        decoder->consumed());
}

// The incremental decoder, as in C++: feed() returns (state, consumed).
class PyDecoder {
 public:
  PyDecoder(bool permissive, uint32_t max_descriptor_bytes) {
    ParseOptions options = OptionsFor(permissive);
    if (max_descriptor_bytes != 0) {
      options.limits.max_descriptor_bytes = max_descriptor_bytes;
    }
    decoder_ = std::make_unique<DescriptorDecoder>(options);
  }

  py::tuple Feed(py::handle chunk) {
    ByteView view(chunk);
    const FeedResult r = decoder_->Feed(view.span());
    return py::make_tuple(static_cast<int>(r.state), r.consumed);
  }
  int Finish() { return static_cast<int>(decoder_->Finish()); }
  void Reset() { decoder_->Reset(); }
  int state() const { return static_cast<int>(decoder_->state()); }
  uint64_t consumed() const { return decoder_->consumed(); }
  py::object descriptor() const {
    if (decoder_->state() != DecodeState::kDone) return py::none();
    return DescriptorToDict(decoder_->descriptor());
  }
  py::object rejection() const {
    if (decoder_->state() != DecodeState::kRejected) return py::none();
    const Rejection& r = decoder_->rejection();
    return py::make_tuple(std::string(RuleId(r.rule)), r.offset,
                          std::string(r.message));
  }
  void Raise() const { ThrowIfError(decoder_->status()); }

 private:
  std::unique_ptr<DescriptorDecoder> decoder_;
};

// A quantized dense tensor's Dequantizer, built once (descriptor validated
// strictly, parameters read, checked and widened) and run on the data
// buffer as often as asked, through the SIMD kernels with the GIL released.
// The parameters are copied at construction: a Tensor keeps one only while
// its parameter buffers cannot change (python/src/hurray/_tensor.py).
class PyDequantizer {
 public:
  PyDequantizer(const py::dict& fields, const py::sequence& buffers,
                int threads) {
    auto d = std::make_unique<TensorDescriptor>();
    DescriptorFromDict(fields, d.get());
    ThrowIfError(Validate(*d));
    ByteViews views(buffers);
    if (views.spans().size() != d->buffer_count) {
      throw py::value_error("one buffer per buffer-table entry is needed");
    }
    absl::StatusOr<dequant::ParameterBytes> params =
        dequant::ParametersFromBuffers(*d, views.spans());
    ThrowIfError(params.status());
    options_.threads = threads < 1 ? 1 : threads;
    absl::StatusOr<dequant::Dequantizer> dq =
        dequant::Dequantizer::Create(*d, *params, options_);
    ThrowIfError(dq.status());
    dq_.emplace(std::move(*dq));
    shape_.assign(d->shape, d->shape + d->rank);
  }

  // `out`, when given, is a writable C-contiguous float32 array of the
  // tensor's element count, written in place (no allocation, no first-touch
  // page faults); otherwise a new array of the logical shape.
  py::array_t<float> Run(py::handle data_object, py::object out_object,
                         int threads) {
    const uint64_t count = dq_->plan().logical_elements;
    py::array_t<float> out;
    if (out_object.is_none()) {
      out = py::array_t<float>(shape_);
    } else {
      if (!py::isinstance<py::array_t<float, py::array::c_style>>(out_object)) {
        throw py::value_error("out must be a C-contiguous float32 array");
      }
      out = py::reinterpret_borrow<py::array_t<float>>(out_object);
      if (static_cast<uint64_t>(out.size()) != count || !out.writeable()) {
        throw py::value_error(
            "out must be writable and hold the tensor's element count");
      }
    }
    ByteView data(data_object);
    float* dst = out.mutable_data();
    const int n = threads < 1 ? options_.threads : threads;
    absl::Status status;
    {
      py::gil_scoped_release release;
      dq_->Restart();
      status = dq_->ConsumeWhole(data.span(), absl::MakeSpan(dst, count), n);
      if (status.ok()) status = dq_->Finish();
    }
    ThrowIfError(status);
    return out;
  }

 private:
  dequant::DequantOptions options_;
  std::optional<dequant::Dequantizer> dq_;
  std::vector<py::ssize_t> shape_;
};

// The float32 value of every 8-bit-or-narrower minifloat code of a type
// (float8 e4m3/e5m2, float4 e2m1, float6 e2m3/e3m2), for plain tensors.
py::array_t<float> MinifloatTable(uint8_t type_tag) {
  dequant::MinifloatDecoder decode = dequant::MinifloatDecoderFor(type_tag);
  if (decode == nullptr) throw py::value_error("not a minifloat type");
  py::array_t<float> table(256);
  float* t = table.mutable_data();
  for (int code = 0; code < 256; ++code) {
    t[code] = decode(static_cast<uint8_t>(code));
  }
  return table;
}

py::list ElementTypes() {
  py::list out;
  for (int tag = 0; tag < 256; ++tag) {
    const ElementTypeInfo* info = FindElementType(static_cast<uint8_t>(tag));
    if (info == nullptr) continue;
    out.append(py::make_tuple(tag, std::string(info->name), info->bits,
                              info->is_float, info->is_signed, info->tier));
  }
  return out;
}

py::list Rules() {
  py::list out;
  for (const RuleInfo& r : AllRules()) {
    out.append(py::make_tuple(std::string(r.id), std::string(r.spec_ref)));
  }
  return out;
}

}  // namespace

void BindCodec(py::module_& m) {
  m.def("encode_quantization", &EncodeQuantization);
  m.def("decode_quantization", &DecodeQuantizationSection);
  m.def("check_construction", &CheckConstruction);
  m.def("check_index_data", &CheckIndexData);
  m.def("encode_descriptor", &EncodeDescriptor, py::arg("fields"),
        py::arg("permissive") = false);
  m.def("decode_descriptor", &DecodeDescriptor, py::arg("bytes"),
        py::arg("permissive") = false);
  py::class_<PyDequantizer>(m, "Dequantizer")
      .def(py::init<const py::dict&, const py::sequence&, int>(),
           py::arg("fields"), py::arg("buffers"), py::arg("threads") = 1)
      .def("run", &PyDequantizer::Run, py::arg("data"),
           py::arg("out") = py::none(), py::arg("threads") = 0);
  m.def("minifloat_table", &MinifloatTable);
  m.def("element_types", &ElementTypes);
  m.def("nf4_lut",
        [] { return std::vector<float>(kNf4Lut.begin(), kNf4Lut.end()); });
  m.def("rules", &Rules);
  py::class_<PyDecoder>(m, "Decoder", py::dynamic_attr())
      .def(py::init<bool, uint32_t>(), py::arg("permissive") = false,
           py::arg("max_descriptor_bytes") = 0)
      .def("feed", &PyDecoder::Feed, py::arg("chunk"))
      .def("finish", &PyDecoder::Finish)
      .def("reset", &PyDecoder::Reset)
      .def("raise_rejection", &PyDecoder::Raise)
      .def_property_readonly("state", &PyDecoder::state)
      .def_property_readonly("consumed", &PyDecoder::consumed)
      .def_property_readonly("fields", &PyDecoder::descriptor)
      .def_property_readonly("rejection", &PyDecoder::rejection);
}

}  // namespace hurray::python
