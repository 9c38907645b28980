// testdata_gen OUTDIR: writes descriptor files for tools/cli_test.sh.
//
//   OUTDIR/valid/<name>.bin       every vector of hurray::vectors::AllValid()
//                                 (extension_type_f3 uses the private type
//                                 tag 0xF3: strict mode without an agreement
//                                 rejects it, TYPE-06)
//   OUTDIR/bad_magic.bin          dense_f32_3x4, magic "XRRY"  (DESC-HDR-02 @0)
//   OUTDIR/pca_scale_type_f16.bin per_channel_asym_int8 with scale_type_tag
//                                 float16                   (QNT-PCA-03 @113)
//   OUTDIR/unknown_layout_0c.bin  dense_f32_3x4, layout_tag 0x0C
//                                 (strict: LAY-TAG-02 @15; permissive: OK)
//   OUTDIR/unassigned_scheme_06.bin per_tensor_int8 with scheme_tag 0x06
//                                 (strict: QNT-HDR-05; permissive: OK, the
//                                 payload is not interpreted)
//   OUTDIR/truncated.bin          dense_f32_3x4 without its last 5 bytes
//                                 (DESC-HDR-01 @56)
//   OUTDIR/trailing_data.bin      dense_f32_3x4 followed by its 48 data bytes
//                                 (OK: bytes after the descriptor are ignored)
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "parser/descriptor.h"
#include "parser/element_type.h"
#include "parser/quantization.h"
#include "tests/vectors.h"

namespace {

bool WriteFile(const std::filesystem::path& path,
               const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) {
    std::fprintf(stderr, "testdata_gen: cannot write %s\n", path.c_str());
    return false;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  namespace vectors = hurray::vectors;
  if (argc != 2) {
    std::fprintf(stderr, "usage: testdata_gen OUTDIR\n");
    return 2;
  }
  const std::filesystem::path dir = argv[1];
  std::error_code ec;
  std::filesystem::create_directories(dir / "valid", ec);
  if (ec) {
    std::fprintf(stderr, "testdata_gen: cannot create %s: %s\n",
                 (dir / "valid").c_str(), ec.message().c_str());
    return 1;
  }

  bool ok = true;
  for (const vectors::Named& v : vectors::AllValid()) {
    ok &= WriteFile(dir / "valid" / (v.name + ".bin"),
                    vectors::Bytes(*v.descriptor));
  }

  const auto dense = vectors::Dense(hurray::type_tag::kFloat32, {3, 4});
  const std::vector<uint8_t> dense_bytes = vectors::Bytes(*dense);

  std::vector<uint8_t> bad_magic = dense_bytes;
  bad_magic[0] = 'X';
  ok &= WriteFile(dir / "bad_magic.bin", bad_magic);

  auto pca = vectors::PerChannelAsymInt8();
  pca->quantization.scale_type_tag = hurray::type_tag::kFloat16;
  ok &= WriteFile(dir / "pca_scale_type_f16.bin", vectors::Bytes(*pca));

  std::vector<uint8_t> unknown_layout = dense_bytes;
  unknown_layout[15] = 0x0C;  // layout_tag: unassigned public tag
  ok &= WriteFile(dir / "unknown_layout_0c.bin", unknown_layout);

  auto scheme = vectors::PerTensorInt8();
  scheme->quantization.scheme_tag = 0x06;  // unassigned scheme
  scheme->quantization.extra_length = 12;  // opaque payload, same size
  ok &= WriteFile(dir / "unassigned_scheme_06.bin", vectors::Bytes(*scheme));

  std::vector<uint8_t> truncated = dense_bytes;
  truncated.resize(truncated.size() - 5);
  ok &= WriteFile(dir / "truncated.bin", truncated);

  std::vector<uint8_t> trailing = dense_bytes;
  trailing.resize(trailing.size() + dense->buffers[0].byte_size, 0x5A);
  ok &= WriteFile(dir / "trailing_data.bin", trailing);

  return ok ? 0 : 1;
}
