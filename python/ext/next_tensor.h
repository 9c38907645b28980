// The next tensor a QueueSink (queue_sink.h) holds, as Python gets it from
// the network and HTTP ingest iterators: (key, fields, buffers), or None at
// the end; raises what stopped the source. Waits without the GIL.
#ifndef HURRAY_PYTHON_EXT_NEXT_TENSOR_H_
#define HURRAY_PYTHON_EXT_NEXT_TENSOR_H_

#include <pybind11/pybind11.h>

#include <string>
#include <utility>

#include "absl/status/status.h"
#include "python/ext/buffers.h"
#include "python/ext/descriptor_dict.h"
#include "python/ext/errors.h"
#include "python/ext/queue_sink.h"

namespace hurray::python {

inline pybind11::object NextTensor(QueueSink& queue) {
  Arrived a;
  absl::Status status;
  bool got;
  {
    pybind11::gil_scoped_release release;
    got = queue.Next(&a, &status);
  }
  if (!got) {
    ThrowIfError(status);
    return pybind11::none();
  }
  pybind11::list buffers;
  for (std::string& b : a.buffers) buffers.append(OwnedBytes(std::move(b)));
  return pybind11::make_tuple(pybind11::str(a.key),
                              DescriptorToDict(*a.descriptor), buffers);
}

}  // namespace hurray::python

#endif  // HURRAY_PYTHON_EXT_NEXT_TENSOR_H_
