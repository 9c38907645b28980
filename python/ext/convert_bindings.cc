// `_hurray.convert(input, output, ...)`: the whole conversion with the GIL
// released; python/src/hurray/_convert.py turns what it returns into
// ConvertedTensor objects. Ctrl-C: the run polls for signals (taking the
// GIL back for it at most every 50 ms, before a write) and stops, the
// output unpublished, raising the KeyboardInterrupt.
#include "python/ext/convert_bindings.h"

#include <pybind11/stl.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "python/ext/errors.h"
#include "stream/convert/convert.h"
#include "stream/convert/convert_file.h"
#include "stream/convert/quantizer.h"

namespace hurray::python {
namespace {

namespace py = pybind11;
namespace convert = stream::convert;

// A name from the input (GGUF names need not be UTF-8).
py::object NameOf(const std::string& s) {
  PyObject* o = PyUnicode_DecodeUTF8(
      s.data(), static_cast<Py_ssize_t>(s.size()), "surrogateescape");
  if (o == nullptr) throw py::error_already_set();
  return py::reinterpret_steal<py::object>(o);
}

std::optional<convert::QuantizeSpec> SchemeOf(
    const std::optional<std::string>& text, const char* what) {
  if (!text.has_value()) return std::nullopt;
  absl::StatusOr<convert::QuantizeSpec> q = convert::ParseQuantizeSpec(*text);
  if (!q.ok()) {
    throw py::value_error(absl::StrCat(what, ": ", q.status().message()));
  }
  return *std::move(q);
}

// (format, tensor_count, kv_entries, bytes_written, kernel_copied_bytes,
//  padding_bytes, [(name, shape, source_type, type, scheme, exact,
//  quantized, max_abs_error, rms_error, note)], [warning])
py::tuple Convert(const std::string& input, const std::string& output,
                  std::optional<std::string> quantize,
                  std::optional<std::string> requantize,
                  std::vector<std::string> skip, bool compact_kquants,
                  std::optional<uint64_t> data_alignment,
                  std::vector<std::pair<std::string, std::string>> kv,
                  std::optional<uint64_t> chunk_size,
                  std::optional<uint64_t> scale_spool_bytes,
                  std::optional<uint64_t> max_metadata_bytes,
                  std::optional<uint64_t> max_buffer_bytes,
                  std::optional<uint64_t> max_safetensors_header_bytes,
                  std::optional<uint64_t> max_gguf_metadata_bytes) {
  convert::ConvertOptions o;
  o.quantize = SchemeOf(quantize, "quantize");
  o.requantize = SchemeOf(requantize, "requantize");
  o.skip = std::move(skip);
  o.kquant_compact = compact_kquants;
  for (const auto& [key, value] : kv) {
    if (key.empty()) throw py::value_error("kv: an empty key");
  }
  o.kv = std::move(kv);
  if (data_alignment.has_value()) {
    if (!convert::IsValidDataAlignment(*data_alignment)) {
      throw py::value_error(absl::StrCat(
          "data_alignment ", *data_alignment,
          ": a power of two of bytes from 4096 to 2097152 is needed"));
    }
    o.data_buffer_alignment = static_cast<uint32_t>(*data_alignment);
  }
  if (chunk_size.has_value()) {
    if (*chunk_size == 0 || *chunk_size > (uint64_t{1} << 30)) {
      throw py::value_error("chunk_size: 1 byte to 1 GiB");
    }
    o.chunk_bytes = static_cast<size_t>(*chunk_size);
  }
  if (scale_spool_bytes.has_value()) o.scale_spool_bytes = *scale_spool_bytes;
  if (max_metadata_bytes.has_value()) {
    o.reader.max_metadata_bytes = *max_metadata_bytes;
  }
  if (max_buffer_bytes.has_value()) {
    o.reader.limits.max_buffer_bytes = *max_buffer_bytes;
  }
  if (max_safetensors_header_bytes.has_value()) {
    o.safetensors.max_header_bytes = *max_safetensors_header_bytes;
  }
  if (max_gguf_metadata_bytes.has_value()) {
    o.gguf.max_metadata_bytes = *max_gguf_metadata_bytes;
  }
  // Signals are handled on the main thread with the GIL: taken back for
  // that, at most every 50 ms. A Python exception a handler raises stops
  // the run and is raised in place of its status.
  std::unique_ptr<py::error_already_set> raised;
  auto last = std::chrono::steady_clock::now();
  auto cancelled = [&]() -> bool {
    if (raised != nullptr) return true;
    const auto now = std::chrono::steady_clock::now();
    if (now - last < std::chrono::milliseconds(50)) return false;
    last = now;
    py::gil_scoped_acquire gil;
    if (PyErr_CheckSignals() != 0) {
      raised = std::make_unique<py::error_already_set>();
      return true;
    }
    return false;
  };
  std::vector<std::string> warnings;
  absl::StatusOr<convert::ConvertReport> r;
  {
    py::gil_scoped_release release;
    r = convert::ConvertFile(input, output, std::move(o), &warnings, cancelled);
  }
  if (raised != nullptr) throw py::error_already_set(*raised);
  ThrowIfError(r.status());
  py::list tensors;
  for (const convert::ConvertedTensor& t : r->tensors) {
    py::tuple shape(t.shape.size());
    for (size_t i = 0; i < t.shape.size(); ++i) shape[i] = py::int_(t.shape[i]);
    tensors.append(py::make_tuple(NameOf(t.name), shape, t.source_type,
                                  t.hurray_type, t.scheme, t.exact, t.quantized,
                                  t.exact ? 0.0 : t.max_abs_error,
                                  t.exact ? 0.0 : t.rms_error, t.note));
  }
  py::list notes;
  for (const std::string& w : warnings) notes.append(NameOf(w));
  return py::make_tuple(r->format, r->tensor_count, r->kv_entries,
                        r->bytes_written, r->kernel_copied_bytes,
                        r->padding_bytes, tensors, notes);
}

}  // namespace

void BindConvert(py::module_& m) {
  m.def("convert", &Convert, py::arg("input"), py::arg("output"),
        py::arg("quantize") = py::none(), py::arg("requantize") = py::none(),
        py::arg("skip") = std::vector<std::string>(),
        py::arg("compact_kquants") = false,
        py::arg("data_alignment") = py::none(),
        py::arg("kv") = std::vector<std::pair<std::string, std::string>>(),
        py::arg("chunk_size") = py::none(),
        py::arg("scale_spool_bytes") = py::none(),
        py::arg("max_metadata_bytes") = py::none(),
        py::arg("max_buffer_bytes") = py::none(),
        py::arg("max_safetensors_header_bytes") = py::none(),
        py::arg("max_gguf_metadata_bytes") = py::none());
}

}  // namespace hurray::python
