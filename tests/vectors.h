// Valid descriptors of every kind this library decodes, built from fields.
// Tests break one field of these at a time; the corpus generator, the fuzz
// seeds and the benchmarks encode them.
#ifndef HURRAY_TESTS_VECTORS_H_
#define HURRAY_TESTS_VECTORS_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "parser/descriptor.h"
#include "parser/options.h"

namespace hurray::vectors {

// A dense row-major descriptor with one CPU buffer sized for its elements.
std::unique_ptr<TensorDescriptor> Dense(uint8_t type_tag,
                                        std::vector<uint64_t> shape,
                                        uint8_t layout = layout_tag::kRowMajor);

// Quantized dense descriptors, one per scheme, valid as returned.
std::unique_ptr<TensorDescriptor> PerTensorInt8();       // int8 [4, 8]
std::unique_ptr<TensorDescriptor> PerChannelAsymInt8();  // int8 [4, 8], axis 0
std::unique_ptr<TensorDescriptor> PerChannelSymInt4();   // int4 [6, 5], axis 1
std::unique_ptr<TensorDescriptor> PerChannelShared();    // one [scales|zps]
std::unique_ptr<TensorDescriptor> PerBlockAsymUInt4();   // uint4 [8, 100], K=32
std::unique_ptr<TensorDescriptor> PerBlockSymInt8Bf16();  // int8 [64, 64]
std::unique_ptr<TensorDescriptor> Nf4UInt4();             // uint4 [128, 64]
std::unique_ptr<TensorDescriptor> MxfpE4m3();             // fp8 [4, 64], K=32
std::unique_ptr<TensorDescriptor> MxfpFp4();              // fp4 [2, 64]

// Descriptors with each optional section.
std::unique_ptr<TensorDescriptor> WithShard();          // f32 [8, 4] of [8, 8]
std::unique_ptr<TensorDescriptor> WithStatistics();     // f32 [16]
std::unique_ptr<TensorDescriptor> WithExtensionType();  // private 0xF3, 4 bit
std::unique_ptr<TensorDescriptor> WithCompositeMember();  // f32 [2, 2], base
std::unique_ptr<TensorDescriptor> Everything();  // quantized + every section

// One valid descriptor per layout tag beyond row/column-major.
std::unique_ptr<TensorDescriptor> StridedNegative();  // f32 [3, 4], [-4, 1]
std::unique_ptr<TensorDescriptor> TiledNested();      // int8 [6, 8], 2 levels
std::unique_ptr<TensorDescriptor> TiledStrided();     // f16 [4, 4], strided
std::unique_ptr<TensorDescriptor> Morton();           // f32 [3, 4], bits [2, 2]
std::unique_ptr<TensorDescriptor> Hilbert();          // uint4 [4, 4], order 2
std::unique_ptr<TensorDescriptor> Coo();              // f32 [5, 5, 5], nnz 3
std::unique_ptr<TensorDescriptor> Csr();              // f64 [3, 4], nnz 5
std::unique_ptr<TensorDescriptor> Csc();              // int8 [3, 4], nnz 2
std::unique_ptr<TensorDescriptor> Csf();              // f32 [2, 3, 4], nnz 4
std::unique_ptr<TensorDescriptor> BlockPaged();       // int8 [40, 2, 8], PBA
std::unique_ptr<TensorDescriptor> CompositePartition();  // f32 [8, 8], 2
std::unique_ptr<TensorDescriptor> CompositeOverlay();    // f16 [4, 4], 2
std::unique_ptr<TensorDescriptor> ExtensionLayout();     // 0xF7, id 0x5EED

inline constexpr uint64_t kAgreedLayoutId = 0x5EED;

struct Named {
  std::string name;  // file-name friendly, e.g. "per_block_asym_uint4"
  std::unique_ptr<TensorDescriptor> descriptor;
};
// Every valid vector above (every layout tag, every scheme, every section)
// plus a few more shapes (scalar, empty, dynamic
// dimension, column-major, 6-bit and sub-byte types, padded quantization).
std::vector<Named> AllValid();

// Options that agree on the private type tag 0xF3 used by
// WithExtensionType() and the extension layout id of ExtensionLayout()
// (strict mode rejects unagreed private values, TYPE-06 and LAY-TAG-04).
ParseOptions AgreedOptions(Mode mode = Mode::kStrict);

// Encodes; aborts on failure (vectors are valid by construction).
std::vector<uint8_t> Bytes(const TensorDescriptor& d);

}  // namespace hurray::vectors

#endif  // HURRAY_TESTS_VECTORS_H_
