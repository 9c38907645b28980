#include "tools/descriptor_json.h"

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "parser/descriptor.h"
#include "parser/element_type.h"
#include "parser/quantization.h"
#include "parser/rules.h"
#include "tests/vectors.h"
#include "tools/json_writer.h"

namespace hurray::tools {
namespace {

std::string QuantizationJson(const QuantizationDescriptor& q) {
  std::string out;
  JsonWriter w(&out);
  WriteQuantization(q, &w);
  EXPECT_TRUE(w.complete());
  return out;
}

TEST(DescriptorJsonTest, DenseFloat32) {
  auto d = vectors::Dense(type_tag::kFloat32, {3, 4});
  d->descriptor_length = 61;  // as the decoder would have read it
  EXPECT_EQ(DescriptorToJson(*d),
            R"({"descriptor_length":61,"version_major":1,"version_minor":0,)"
            R"("flags":0,"element_type_tag":3,"layout_tag":1,"rank":2,)"
            R"("shape":[3,4],"byte_offset":0,"buffers":[{"byte_size":48,)"
            R"("alignment":64,"device_tag":0,"sync_mode":0,"memory_class":0}],)"
            R"("quantization":null,"has_shard":false,"has_statistics":false,)"
            R"("has_extension_type":false,"has_composite_member":false,)"
            R"("element_type_name":"float32","layout_name":"row_major",)"
            R"("layout":{"name":"row_major"},)"
            R"("shard":null,"statistics":null,"extension_type":null,)"
            R"("composite_member":null})");
}

// Every layout's own fields appear under "layout", by their spec names.
TEST(DescriptorJsonTest, LayoutFields) {
  auto has = [](const std::unique_ptr<TensorDescriptor>& d, const char* want) {
    const std::string json = DescriptorToJson(*d);
    EXPECT_NE(json.find(want), std::string::npos) << json;
  };
  has(vectors::StridedNegative(),
      R"("layout":{"name":"strided","strides":[-4,1]},)");
  has(vectors::TiledNested(),
      R"("layout":{"name":"tiled","levels":[{"tile_shape":[2,4],)"
      R"("outer_layout":1,"inner_layout":4},{"tile_shape":[1,2],)"
      R"("outer_layout":2,"inner_layout":1}]},)");
  has(vectors::TiledStrided(),
      R"("outer_layout":3,"inner_layout":3,"outer_strides":[1,2],)"
      R"("inner_strides":[1,2]}]},)");
  has(vectors::Morton(), R"("layout":{"name":"morton","morton_bits":[2,2]},)");
  has(vectors::Hilbert(),
      R"("layout":{"name":"hilbert","hilbert_order":2,"hilbert_rank":2},)");
  has(vectors::Coo(), R"("layout":{"name":"coo","nnz":3,"is_sorted":1},)");
  has(vectors::Csr(), R"("layout":{"name":"csr","nnz":5},)");
  has(vectors::Csc(), R"("layout":{"name":"csc","nnz":2},)");
  has(vectors::Csf(),
      R"("layout":{"name":"csf","nnz":4,"mode_order":[2,0,1]},)");
  has(vectors::BlockPaged(),
      R"("layout":{"name":"block_paged","page_size":16,"num_pages":4,)"
      R"("paged_axis":0,"num_seqs":2,"kv_role":1,"layer_index":7,)"
      R"("block_table_index_type":0},)");
  has(vectors::CompositeOverlay(),
      R"("layout":{"name":"composite","composition_rule":2,)"
      R"("combine_op":2,"member_count":2},)");
  has(vectors::ExtensionLayout(),
      R"("layout":{"name":"extension","extension_layout_id":24301,)"
      R"("extension_data_length":5,"extension_data_offset":0},)");
}

TEST(DescriptorJsonTest, DynamicDimensionIsExact) {
  auto d = vectors::Dense(type_tag::kFloat16, {kDynamicDim, 8});
  EXPECT_NE(DescriptorToJson(*d).find(R"("shape":[18446744073709551615,8])"),
            std::string::npos);
}

TEST(DescriptorJsonTest, ScalarHasEmptyShape) {
  auto d = vectors::Dense(type_tag::kFloat64, {});
  EXPECT_NE(DescriptorToJson(*d).find(R"("rank":0,"shape":[],)"),
            std::string::npos);
}

// The members come in the documented order for every kind of descriptor.
TEST(DescriptorJsonTest, KeyOrderForEveryVector) {
  const std::vector<std::string> keys = {"descriptor_length",
                                         "version_major",
                                         "version_minor",
                                         "flags",
                                         "element_type_tag",
                                         "layout_tag",
                                         "rank",
                                         "shape",
                                         "byte_offset",
                                         "buffers",
                                         "quantization",
                                         "has_shard",
                                         "has_statistics",
                                         "has_extension_type",
                                         "has_composite_member",
                                         "element_type_name",
                                         "layout_name",
                                         "layout",
                                         "shard",
                                         "statistics",
                                         "extension_type",
                                         "composite_member"};
  for (const vectors::Named& v : vectors::AllValid()) {
    const std::string json = DescriptorToJson(*v.descriptor);
    ASSERT_EQ(json.rfind("{\"descriptor_length\":", 0), 0u) << v.name;
    size_t at = 0;
    for (const std::string& key : keys) {
      const size_t found = json.find(absl::StrCat("\"", key, "\":"), at);
      ASSERT_NE(found, std::string::npos) << v.name << ": " << key;
      at = found + 1;
    }
    EXPECT_EQ(json.back(), '}') << v.name;
  }
}

TEST(QuantizationJsonTest, PerTensorAffine) {
  EXPECT_EQ(QuantizationJson(vectors::PerTensorInt8()->quantization),
            R"({"scheme_tag":1,"scheme_version":1,"flags":0,"axis":null,)"
            R"("block_size":null,"scale_buffer_index":null,)"
            R"("zero_point_buffer_index":null,"scale_type_tag":null,)"
            R"("scale":0.05000000074505806,"zero_point":-3})");
}

TEST(QuantizationJsonTest, PerChannelAffine) {
  EXPECT_EQ(QuantizationJson(vectors::PerChannelAsymInt8()->quantization),
            R"({"scheme_tag":2,"scheme_version":1,"flags":0,"axis":0,)"
            R"("block_size":null,"scale_buffer_index":1,)"
            R"("zero_point_buffer_index":2,"scale_type_tag":3,)"
            R"("scale":null,"zero_point":null})");
  // Symmetric: no zero-point buffer.
  EXPECT_EQ(QuantizationJson(vectors::PerChannelSymInt4()->quantization),
            R"({"scheme_tag":2,"scheme_version":1,"flags":1,"axis":1,)"
            R"("block_size":null,"scale_buffer_index":1,)"
            R"("zero_point_buffer_index":null,"scale_type_tag":3,)"
            R"("scale":null,"zero_point":null})");
}

TEST(QuantizationJsonTest, PerBlockAffine) {
  EXPECT_EQ(QuantizationJson(vectors::PerBlockAsymUInt4()->quantization),
            R"({"scheme_tag":3,"scheme_version":1,"flags":0,"axis":1,)"
            R"("block_size":32,"scale_buffer_index":1,)"
            R"("zero_point_buffer_index":2,"scale_type_tag":1,)"
            R"("scale":null,"zero_point":null})");
  EXPECT_EQ(QuantizationJson(vectors::PerBlockSymInt8Bf16()->quantization),
            R"({"scheme_tag":3,"scheme_version":1,"flags":1,"axis":0,)"
            R"("block_size":16,"scale_buffer_index":1,)"
            R"("zero_point_buffer_index":null,"scale_type_tag":2,)"
            R"("scale":null,"zero_point":null})");
}

TEST(QuantizationJsonTest, Nf4AndMxfp) {
  EXPECT_EQ(QuantizationJson(vectors::Nf4UInt4()->quantization),
            R"({"scheme_tag":4,"scheme_version":1,"flags":0,"axis":1,)"
            R"("block_size":64,"scale_buffer_index":1,)"
            R"("zero_point_buffer_index":null,"scale_type_tag":null,)"
            R"("scale":null,"zero_point":null})");
  EXPECT_EQ(QuantizationJson(vectors::MxfpE4m3()->quantization),
            R"({"scheme_tag":5,"scheme_version":1,"flags":0,"axis":1,)"
            R"("block_size":32,"scale_buffer_index":1,)"
            R"("zero_point_buffer_index":null,"scale_type_tag":null,)"
            R"("scale":null,"zero_point":null})");
}

TEST(QuantizationJsonTest, UninterpretedSchemeHasOnlyTheHeader) {
  const std::string header_only =
      R"("axis":null,"block_size":null,"scale_buffer_index":null,)"
      R"("zero_point_buffer_index":null,"scale_type_tag":null,)"
      R"("scale":null,"zero_point":null})";
  QuantizationDescriptor unassigned;
  unassigned.scheme_tag = 0x06;
  unassigned.extra_length = 12;
  EXPECT_EQ(QuantizationJson(unassigned),
            R"({"scheme_tag":6,"scheme_version":1,"flags":0,)" + header_only);
  // An assigned scheme at a newer version is not interpreted either.
  QuantizationDescriptor future = vectors::PerTensorInt8()->quantization;
  future.scheme_version = 2;
  future.flags = 0x8000;
  EXPECT_EQ(
      QuantizationJson(future),
      R"({"scheme_tag":1,"scheme_version":2,"flags":32768,)" + header_only);
}

TEST(QuantizationJsonTest, NonFiniteScaleIsNull) {
  QuantizationDescriptor q = vectors::PerTensorInt8()->quantization;
  q.scale = std::nanf("");
  EXPECT_NE(QuantizationJson(q).find(R"("scale":null,"zero_point":-3)"),
            std::string::npos);
}

TEST(DescriptorJsonTest, UnparsedLayout) {
  // Permissive decode of an unassigned layout tag: only the header, shape
  // and byte_offset are known; the flags still say what follows.
  auto d = vectors::PerTensorInt8();
  d->layout_tag = 0x0C;
  d->layout_parsed = false;
  d->flags |= flag::kHasShard;
  const std::string json = DescriptorToJson(*d);
  EXPECT_NE(json.find(R"("layout_tag":12,)"), std::string::npos) << json;
  EXPECT_NE(json.find(R"("buffers":null,"quantization":null,)"
                      R"("has_shard":true,)"),
            std::string::npos)
      << json;
  EXPECT_NE(json.find(R"("layout_name":"unknown","layout":null,"shard":null,)"),
            std::string::npos)
      << json;
}

TEST(DescriptorJsonTest, Sections) {
  auto d = vectors::Everything();
  const std::string json = DescriptorToJson(*d);
  EXPECT_NE(json.find(R"("shard":{"parent_shape":[8,8],"shard_offset":[4,0]},)"
                      R"("statistics":{"computed_mask":4,"nnz":null,)"
                      R"("sparsity_ratio":null,"value_min":-1,"value_max":1,)"
                      R"("value_abs_max":1,"value_mean":null,)"
                      R"("value_stddev":null,"nm_n":null,"nm_m":null,)"
                      R"("has_nan":null,"has_inf":null},)"
                      R"("extension_type":null,)"
                      R"("composite_member":{"member_role":0}})"),
            std::string::npos)
      << json;

  auto e = vectors::WithExtensionType();
  EXPECT_NE(DescriptorToJson(*e).find(
                R"("element_type_name":"ext:0xF3",)"
                R"("layout_name":"row_major","layout":{"name":"row_major"},)"
                R"("shard":null,"statistics":null,)"
                R"("extension_type":{"bit_width":4,"packing_factor":2,)"
                R"("is_float":1,"is_signed":0,"sign_bits":1,)"
                R"("exponent_bits":2,"mantissa_bits":1,"exponent_bias":1,)"
                R"("has_nan":0,"has_inf":0},"composite_member":null})"),
            std::string::npos);
}

TEST(DescriptorJsonTest, NonFiniteStatisticsAreNull) {
  auto d = vectors::WithStatistics();
  d->statistics.value_max = INFINITY;
  d->statistics.value_mean = NAN;
  const std::string json = DescriptorToJson(*d);
  EXPECT_NE(json.find(R"("value_max":null,)"), std::string::npos) << json;
  EXPECT_NE(json.find(R"("value_mean":null,"value_stddev":1.25,)"),
            std::string::npos)
      << json;
}

TEST(DescriptorJsonTest, Rejection) {
  std::string out;
  JsonWriter w(&out);
  w.BeginObject();
  WriteRejectionMembers({Rule::kDescHdr02, 0, "magic is not \"HRRY\""}, &w);
  w.EndObject();
  EXPECT_EQ(
      out,
      R"({"rule":"DESC-HDR-02","offset":0,"error":"magic is not \"HRRY\""})");
}

}  // namespace
}  // namespace hurray::tools
