// Conversion between the C++ records of parser/ and the plain Python values
// the `hurray` package builds its classes from (python/src/hurray/).
//
// A descriptor crosses as a dict with the keys "type", "layout", "shape",
// "byte_offset", "buffers" (a list of (byte_size, alignment, device_tag,
// sync_mode, memory_class) tuples), "version", the layout's own fields
// ("strides", "nnz", "is_sorted", "mode_order", "morton_bits",
// "hilbert_order"), and the optional sections "quantization", "shard",
// "statistics" (None when absent). A quantization section crosses as a dict
// with "scheme", "flags", "scale", "zero_point", "axis", "block_size",
// "scale_buffer_index", "zero_point_buffer_index", "scale_type".
//
// Nothing here validates: that stays with the parser's validator, so the
// Python module refuses exactly what the C++ library refuses.
#ifndef HURRAY_PYTHON_EXT_DESCRIPTOR_DICT_H_
#define HURRAY_PYTHON_EXT_DESCRIPTOR_DICT_H_

#include <pybind11/pybind11.h>

#include "parser/descriptor.h"
#include "parser/quantization.h"

namespace hurray::python {

namespace py = pybind11;

py::dict QuantizationToDict(const QuantizationDescriptor& q);
// Unknown keys are ignored; missing keys keep their defaults. Raises
// ValueError (py::value_error) for a value that does not fit its field.
QuantizationDescriptor QuantizationFromDict(const py::dict& d);

py::dict DescriptorToDict(const TensorDescriptor& d);
// Fills `out` (reset first). Layouts whose fields this module cannot build
// (tiled, block-paged, composite, extension) raise NotImplementedError.
void DescriptorFromDict(const py::dict& d, TensorDescriptor* out);

}  // namespace hurray::python

#endif  // HURRAY_PYTHON_EXT_DESCRIPTOR_DICT_H_
