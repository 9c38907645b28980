// The native protocol's payload: what `Tensor.__hurray__()` returns inside a
// PyCapsule named "hurray_tensor", for C and C++ consumers.
//
// The capsule carries one whole tensor: its encoded descriptor (strictly
// valid, metadata.md) and every buffer of its buffer table, in order (values
// and indices of a sparse tensor, quantization parameters). The producer's
// memory is shared, not copied.
//
// Ownership, as DLPack's: a consumer that takes the payload renames the
// capsule "used_hurray_tensor" and calls `deleter(payload)` (GIL held) when it
// no longer needs the memory; a capsule never consumed calls it when it is
// freed. Each `__hurray__()` call makes a fresh capsule.
#ifndef HURRAY_PYTHON_EXT_TENSOR_CAPSULE_H_
#define HURRAY_PYTHON_EXT_TENSOR_CAPSULE_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define HURRAY_TENSOR_CAPSULE_NAME "hurray_tensor"
#define HURRAY_TENSOR_CAPSULE_USED_NAME "used_hurray_tensor"
#define HURRAY_TENSOR_CAPSULE_VERSION 1u
// flags: the producer's memory must not be written through these pointers.
#define HURRAY_TENSOR_READ_ONLY 1u

typedef struct HurrayTensorCapsule {
  uint32_t version;  // HURRAY_TENSOR_CAPSULE_VERSION
  uint32_t flags;
  const uint8_t* descriptor;  // encoded descriptor bytes
  size_t descriptor_size;
  uint32_t buffer_count;  // the descriptor's buffer_count
  void* const* buffers;   // buffer i's first byte
  const uint64_t* buffer_sizes;
  void* manager_ctx;  // the producer's: keeps the memory alive
  void (*deleter)(struct HurrayTensorCapsule* self);
} HurrayTensorCapsule;

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // HURRAY_PYTHON_EXT_TENSOR_CAPSULE_H_
