// Builders of small safetensors and GGUF files for tests, seeds and
// benchmarks. Each writes what it is told, so tests can lie in any field.
#ifndef HURRAY_STREAM_CONVERT_TESTING_SOURCE_BUILDERS_H_
#define HURRAY_STREAM_CONVERT_TESTING_SOURCE_BUILDERS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace hurray::stream::convert::testing {

// A safetensors file: 8-byte length (or `declared_length`), `header` as
// given, then `data`.
std::vector<uint8_t> RawSafetensors(
    const std::string& header, const std::vector<uint8_t>& data,
    std::optional<uint64_t> declared_length = std::nullopt);

struct StTensor {
  std::string name;
  std::string dtype;
  std::vector<uint64_t> shape;
  std::vector<uint8_t> data;
};
// A valid file: tensors back to back in the given order.
std::vector<uint8_t> BuildSafetensors(
    const std::vector<StTensor>& tensors,
    const std::vector<std::pair<std::string, std::string>>& metadata = {});
// JSON string literal of `s` (quotes included; bytes above 0x7F kept raw).
std::string JsonQuote(const std::string& s);

class GgufBuilder {
 public:
  explicit GgufBuilder(uint32_t version = 3) : version_(version) {}
  void KvU32(const std::string& key, uint32_t v);
  void KvI32(const std::string& key, int32_t v);
  void KvF32(const std::string& key, float v);
  void KvBool(const std::string& key, bool v);
  void KvString(const std::string& key, const std::string& v);
  void KvStringArray(const std::string& key, const std::vector<std::string>& v);
  void KvI32Array(const std::string& key, const std::vector<int32_t>& v);
  // Raw bytes of one KV pair (key written by the builder, then `value`
  // holding the type and the value as given).
  void KvRaw(const std::string& key, const std::vector<uint8_t>& value);
  // A tensor: `ne` in ggml order, data placed at the next aligned offset
  // unless `offset` is given (relative to the data section).
  void Tensor(const std::string& name, const std::vector<uint64_t>& ne,
              uint32_t type, const std::vector<uint8_t>& data,
              std::optional<uint64_t> offset = std::nullopt);
  void set_alignment(uint32_t a) { alignment_ = a; }
  // Counts written in the header (default: the real counts).
  void set_counts(std::optional<uint64_t> tensors, std::optional<uint64_t> kv) {
    tensor_count_ = tensors;
    kv_count_ = kv;
  }
  std::vector<uint8_t> Build() const;

 private:
  struct T {
    std::string name;
    std::vector<uint64_t> ne;
    uint32_t type;
    std::vector<uint8_t> data;
    std::optional<uint64_t> offset;
  };
  uint32_t version_;
  uint32_t alignment_ = 32;
  uint64_t kv_entries_ = 0;
  std::vector<uint8_t> kv_;
  std::vector<T> tensors_;
  std::optional<uint64_t> tensor_count_, kv_count_;
};

// Little-endian appenders.
void PutU16(std::vector<uint8_t>* out, uint16_t v);
void PutU32(std::vector<uint8_t>* out, uint32_t v);
void PutU64(std::vector<uint8_t>* out, uint64_t v);
void PutGgufString(std::vector<uint8_t>* out, const std::string& s);

}  // namespace hurray::stream::convert::testing

#endif  // HURRAY_STREAM_CONVERT_TESTING_SOURCE_BUILDERS_H_
