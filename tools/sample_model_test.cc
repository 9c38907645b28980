#include "tools/sample_model.h"

#include <cmath>
#include <cstring>
#include <set>
#include <vector>

#include "dequant/params.h"
#include "dequant/scalar.h"
#include "gtest/gtest.h"
#include "parser/quantization.h"
#include "stream/container/hrry_file.h"

namespace hurray::tools {
namespace {

TEST(SampleModelTest, EveryTensorDequantizesCloseToItsOriginalWeights) {
  absl::StatusOr<std::vector<SampleTensor>> tensors = BuildSampleTensors();
  ASSERT_TRUE(tensors.ok()) << tensors.status();
  std::set<uint8_t> schemes;
  for (const SampleTensor& t : *tensors) {
    SCOPED_TRACE(t.name);
    const TensorDescriptor& d = *t.descriptor;
    std::vector<float> out;
    if (!(d.flags & flag::kHasQuantization)) {
      out.resize(t.original.size());
      ASSERT_EQ(t.buffers[0].size(), out.size() * 4);
      std::memcpy(out.data(), t.buffers[0].data(), t.buffers[0].size());
      EXPECT_EQ(out, t.original);
      continue;
    }
    schemes.insert(d.quantization.scheme_tag);
    std::vector<absl::Span<const uint8_t>> views(t.buffers.begin(),
                                                 t.buffers.end());
    absl::StatusOr<dequant::ParameterBytes> params =
        dequant::ParametersFromBuffers(d, views);
    ASSERT_TRUE(params.ok()) << params.status();
    ASSERT_TRUE(
        dequant::ReferenceDequantize(d, t.buffers[0], *params, &out).ok());
    ASSERT_EQ(out.size(), t.original.size());
    float worst = 0;
    for (size_t i = 0; i < out.size(); ++i)
      worst = std::max(worst, std::fabs(out[i] - t.original[i]));
    EXPECT_LE(worst, t.tolerance);
    EXPECT_GT(worst, 0.0f);  // it really was quantized
  }
  EXPECT_EQ(schemes.size(), 5u);
}

TEST(SampleModelTest, TheFileIsValidAndTheSameEveryTime) {
  std::vector<uint8_t> a, b;
  auto to = [](std::vector<uint8_t>* v) {
    return [v](absl::Span<const uint8_t> bytes) {
      v->insert(v->end(), bytes.begin(), bytes.end());
      return absl::OkStatus();
    };
  };
  auto sink_a = to(&a);
  auto sink_b = to(&b);
  ASSERT_TRUE(WriteSampleModel(sink_a).ok());
  ASSERT_TRUE(WriteSampleModel(sink_b).ok());
  EXPECT_EQ(a, b);
  stream::container::FileOptions options;  // strict
  const Rejection r = stream::container::ReadHrry(a, options, nullptr);
  EXPECT_TRUE(r.ok()) << ToStatus(r);
}

}  // namespace
}  // namespace hurray::tools
