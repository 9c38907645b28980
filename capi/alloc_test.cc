// The C decoder allocates once, in hurray_decoder_new; feeding (whole or
// byte by byte), finishing, reading fields and rejections, and resetting
// allocate nothing (the C++ decoder's guarantee, kept across the C
// interface). Linked statically against the wrapper so that
// //tests:alloc_counter sees its operator new.
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "capi/hurray.h"
#include "gtest/gtest.h"
#include "tests/alloc_counter.h"

namespace {

std::vector<uint8_t> Golden(const std::string& name) {
  const char* root = std::getenv("TEST_SRCDIR");
  std::ifstream in(std::string(root ? root : ".") +
                       "/hurray_cpp/corpus/golden/descriptors/" + name,
                   std::ios::binary);
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(in)), {});
}

TEST(CapiAllocTest, DecoderAllocatesOnlyInNew) {
  const std::vector<uint8_t> good = Golden("quant_per_block_int4_128x128.bin");
  ASSERT_FALSE(good.empty());
  std::vector<uint8_t> bad = good;
  bad[4] = 2;  // version_major: DESC-HDR-03

  hurray::testing::AllocationCount at_new;
  hurray_decoder* dec = hurray_decoder_new(0);
  at_new.Stop();
  ASSERT_NE(dec, nullptr);
  EXPECT_EQ(at_new.value(), 1u);

  hurray::testing::AllocationCount feeding;
  hurray_quantization q;
  hurray_error e;
  uint64_t shape[64];
  for (int round = 0; round < 3; ++round) {
    size_t consumed = 0;
    EXPECT_EQ(hurray_decoder_feed(dec, good.data(), good.size(), &consumed),
              HURRAY_OK);
    const hurray_descriptor* d = hurray_decoder_descriptor(dec);
    EXPECT_EQ(hurray_descriptor_shape(d, shape, 64, nullptr), HURRAY_OK);
    EXPECT_EQ(hurray_descriptor_quantization(d, &q), HURRAY_OK);
    EXPECT_EQ(hurray_decoder_error(dec, &e), HURRAY_OK);
    hurray_decoder_reset(dec);
    for (size_t i = 0; i < good.size(); ++i) {
      hurray_decoder_feed(dec, &good[i], 1, &consumed);
    }
    EXPECT_EQ(hurray_decoder_state(dec), HURRAY_OK);
    hurray_decoder_reset(dec);
    EXPECT_EQ(hurray_decoder_feed(dec, bad.data(), bad.size(), nullptr),
              HURRAY_REJECTED);
    EXPECT_EQ(hurray_decoder_error(dec, &e), HURRAY_REJECTED);
    EXPECT_STREQ(hurray_decoder_rule_id(dec), "DESC-HDR-03");
    hurray_decoder_reset(dec);
    EXPECT_EQ(hurray_decoder_feed(dec, good.data(), 30, nullptr),
              HURRAY_NEED_MORE);
    EXPECT_EQ(hurray_decoder_finish(dec), HURRAY_REJECTED);
    hurray_decoder_reset(dec);
    EXPECT_EQ(hurray_decoder_finish(dec), HURRAY_END);
    hurray_decoder_reset(dec);
  }
  feeding.Stop();
  EXPECT_EQ(feeding.value(), 0u);
  hurray_decoder_free(dec);
}

}  // namespace
