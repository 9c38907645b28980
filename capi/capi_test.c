/* The C interface from plain C11, linked against libhurray.so, on the golden
 * corpus (corpus/golden/): decoded fields, rejections with their rule id and
 * offset, byte-by-byte feeding, .hrry lookup, dequantized values, the stream
 * reader's callbacks, and NULL arguments everywhere. */
#include "capi/testing/c_check.h"
#include "hurray.h"
#include "hurray_version.h" /* generated from version.bzl (//:version) */

/* ---- Golden descriptors (corpus/golden/manifest.json) ----------------- */

typedef struct {
  const char* file;
  uint8_t type_tag;
  const char* type_name;
  uint32_t rank;
  uint64_t shape[2];
  uint8_t layout_tag;
  uint32_t buffer_count;
  uint64_t buffer_sizes[3];
  int quantized;
  int sharded;
} Golden;

static const Golden kGolden[] = {
    {"row_major_f32_3x4.bin", 0x03, "float32", 2, {3, 4}, 1, 1, {48}, 0, 0},
    {"row_major_int8_5.bin", 0x10, "int8", 1, {5}, 1, 1, {5}, 0, 0},
    {"row_major_f16_2x2.bin", 0x01, "float16", 2, {2, 2}, 1, 1, {8}, 0, 0},
    {"bool_packed_10.bin", 0x20, "bool", 1, {10}, 1, 1, {2}, 0, 0},
    {"strided_f32_3x4.bin", 0x03, "float32", 2, {3, 4}, 3, 1, {48}, 0, 0},
    {"morton_f32_4x4.bin", 0x03, "float32", 2, {4, 4}, 5, 1, {64}, 0, 0},
    {"empty_f32_0x4.bin", 0x03, "float32", 2, {0, 4}, 1, 1, {0}, 0, 0},
    {"sharded_f32_8x4.bin", 0x03, "float32", 2, {8, 4}, 1, 1, {128}, 0, 1},
    {"csr_f32_3x3.bin", 0x03, "float32", 2, {3, 3}, 7, 3, {8, 16, 32}, 0, 0},
    {"composite_head_partition.bin",
     0x03,
     "float32",
     2,
     {8, 8},
     11,
     0,
     {0},
     0,
     0},
    {"quant_per_block_int4_128x128.bin",
     0x48,
     "int4",
     2,
     {128, 128},
     1,
     2,
     {8192, 256},
     1,
     0},
};
enum { kGoldenCount = sizeof kGolden / sizeof kGolden[0] };

static void CheckFields(const hurray_descriptor* d, const Golden* g) {
  CHECK(d != NULL);
  if (d == NULL) return;
  CHECK(hurray_descriptor_type_tag(d) == g->type_tag);
  CHECK_STR(hurray_type_name(hurray_descriptor_type_tag(d)), g->type_name);
  CHECK(hurray_descriptor_layout_tag(d) == g->layout_tag);
  CHECK(hurray_descriptor_byte_offset(d) == 0);
  CHECK(hurray_descriptor_rank(d) == g->rank);
  uint64_t shape[64];
  uint32_t rank = 99;
  CHECK_STATUS(hurray_descriptor_shape(d, shape, 64, &rank), HURRAY_OK);
  CHECK(rank == g->rank);
  for (uint32_t k = 0; k < g->rank && k < 2; ++k) {
    CHECK(shape[k] == g->shape[k]);
  }
  if (g->rank > 0) {
    CHECK_STATUS(hurray_descriptor_shape(d, shape, g->rank - 1, &rank),
                 HURRAY_BUFFER_TOO_SMALL);
  }
  CHECK(hurray_descriptor_buffer_count(d) == g->buffer_count);
  for (uint32_t i = 0; i < g->buffer_count && i < 3; ++i) {
    uint64_t size = 1234;
    CHECK_STATUS(hurray_descriptor_buffer_size(d, i, &size), HURRAY_OK);
    CHECK(size == g->buffer_sizes[i]);
  }
  uint64_t size = 0;
  CHECK_STATUS(hurray_descriptor_buffer_size(d, g->buffer_count, &size),
               HURRAY_INVALID_ARGUMENT);
  CHECK(((hurray_descriptor_flags(d) & 1u) != 0) == (g->quantized != 0));
  CHECK(((hurray_descriptor_flags(d) & 2u) != 0) == (g->sharded != 0));
  CHECK((hurray_descriptor_quantization_scheme(d) != HURRAY_SCHEME_NONE) ==
        (g->quantized != 0));
  uint64_t count = 0;
  CHECK_STATUS(hurray_descriptor_element_count(d, &count), HURRAY_OK);
  uint64_t want = 1;
  for (uint32_t k = 0; k < g->rank; ++k) want *= g->shape[k];
  CHECK(count == want);
}

static void TestGoldenOneShot(void) {
  hurray_decoder* dec = hurray_decoder_new(0);
  CHECK(dec != NULL);
  for (int i = 0; i < kGoldenCount; ++i) {
    size_t size;
    uint8_t* bytes = ReadGolden(kGolden[i].file, &size);
    if (bytes == NULL) continue;
    size_t consumed = 0;
    /* The same handle for every file: reset between them. */
    hurray_decoder_reset(dec);
    CHECK_STATUS(hurray_decoder_feed(dec, bytes, size, &consumed), HURRAY_OK);
    CHECK(consumed == size);
    CHECK_STATUS(hurray_decoder_state(dec), HURRAY_OK);
    const hurray_descriptor* d = hurray_decoder_descriptor(dec);
    CheckFields(d, &kGolden[i]);
    CHECK(hurray_descriptor_length(d) == size);
    CHECK_STR(hurray_decoder_rule_id(dec), "");
    /* Done: more bytes are not consumed, finish keeps the result. */
    CHECK_STATUS(hurray_decoder_feed(dec, bytes, size, &consumed), HURRAY_OK);
    CHECK(consumed == 0);
    CHECK_STATUS(hurray_decoder_finish(dec), HURRAY_OK);
    free(bytes);
  }
  hurray_decoder_free(dec);
}

static void TestGoldenByteByByte(void) {
  for (int i = 0; i < kGoldenCount; ++i) {
    size_t size;
    uint8_t* bytes = ReadGolden(kGolden[i].file, &size);
    if (bytes == NULL) continue;
    hurray_decoder* dec = hurray_decoder_new(0);
    for (size_t at = 0; at < size; ++at) {
      size_t consumed = 99;
      hurray_status s = hurray_decoder_feed(dec, bytes + at, 1, &consumed);
      CHECK(consumed == 1);
      CHECK_STATUS(s, at + 1 < size ? HURRAY_NEED_MORE : HURRAY_OK);
      CHECK(hurray_decoder_consumed(dec) == at + 1);
      if (at + 1 < size) CHECK(hurray_decoder_descriptor(dec) == NULL);
    }
    CheckFields(hurray_decoder_descriptor(dec), &kGolden[i]);
    hurray_decoder_free(dec);
    free(bytes);
  }
}

/* Two descriptors back to back: feed stops at the first one's end. */
static void TestBackToBack(void) {
  size_t a_size, b_size;
  uint8_t* a = ReadGolden(kGolden[0].file, &a_size);
  uint8_t* b = ReadGolden(kGolden[1].file, &b_size);
  if (a == NULL || b == NULL) {
    free(a);
    free(b);
    return;
  }
  uint8_t* both = malloc(a_size + b_size);
  memcpy(both, a, a_size);
  memcpy(both + a_size, b, b_size);
  hurray_decoder* dec = hurray_decoder_new(0);
  size_t consumed = 0;
  CHECK_STATUS(hurray_decoder_feed(dec, both, a_size + b_size, &consumed),
               HURRAY_OK);
  CHECK(consumed == a_size);
  CheckFields(hurray_decoder_descriptor(dec), &kGolden[0]);
  hurray_decoder_reset(dec);
  CHECK_STATUS(hurray_decoder_feed(dec, both + consumed,
                                   a_size + b_size - consumed, &consumed),
               HURRAY_OK);
  CHECK(consumed == b_size);
  CheckFields(hurray_decoder_descriptor(dec), &kGolden[1]);
  hurray_decoder_reset(dec);
  CHECK_STATUS(hurray_decoder_finish(dec), HURRAY_END);
  CHECK_STATUS(hurray_decoder_state(dec), HURRAY_END);
  hurray_decoder_free(dec);
  free(both);
  free(a);
  free(b);
}

/* A broken descriptor is rejected with the same rule and offset whether it
 * is fed whole or byte by byte. */
static void ExpectRejected(const uint8_t* bytes, size_t size, uint32_t flags,
                           const char* rule, uint64_t offset) {
  for (int bytewise = 0; bytewise < 2; ++bytewise) {
    hurray_decoder* dec = hurray_decoder_new(flags);
    hurray_status s = HURRAY_NEED_MORE;
    size_t fed = 0;
    while (s == HURRAY_NEED_MORE && fed < size) {
      size_t n = bytewise ? 1 : size - fed;
      size_t consumed = 0;
      s = hurray_decoder_feed(dec, bytes + fed, n, &consumed);
      fed += consumed;
    }
    if (s == HURRAY_NEED_MORE) s = hurray_decoder_finish(dec);
    CHECK_STATUS(s, HURRAY_REJECTED);
    CHECK_STR(hurray_decoder_rule_id(dec), rule);
    CHECK(hurray_decoder_offset(dec) == offset);
    CHECK(hurray_decoder_message(dec)[0] != '\0');
    CHECK(hurray_decoder_descriptor(dec) == NULL);
    hurray_error e;
    CHECK_STATUS(hurray_decoder_error(dec, &e), HURRAY_REJECTED);
    CHECK(e.status == HURRAY_REJECTED);
    CHECK_STR(e.rule_id, rule);
    CHECK(e.offset == offset);
    CHECK(e.offset_unit == HURRAY_OFFSET_BYTE);
    /* Rejected is final until reset. */
    size_t consumed = 7;
    CHECK_STATUS(hurray_decoder_feed(dec, bytes, size, &consumed),
                 HURRAY_REJECTED);
    CHECK(consumed == 0);
    hurray_decoder_reset(dec);
    CHECK_STATUS(hurray_decoder_state(dec), HURRAY_NEED_MORE);
    CHECK_STR(hurray_decoder_rule_id(dec), "");
    hurray_decoder_free(dec);
  }
}

static void TestRejections(void) {
  size_t size;
  uint8_t* good = ReadGolden("row_major_f32_3x4.bin", &size);
  if (good == NULL) return;
  uint8_t* bad = malloc(size);
  /* Buffer 0 declares 44 bytes for 12 float32 (its byte_size is at 45). */
  memcpy(bad, good, size);
  bad[45] = 44;
  ExpectRejected(bad, size, 0, "BUF-SZ-01", 45);
  /* version_major 2 (byte 4). */
  memcpy(bad, good, size);
  bad[4] = 2;
  ExpectRejected(bad, size, 0, "DESC-HDR-03", 4);
  /* Input ends after 30 bytes: DESC-HDR-01 where the bytes ran out. */
  ExpectRejected(good, 30, 0, "DESC-HDR-01", 30);
  /* Without the validator, only framing rules: the short buffer passes. */
  memcpy(bad, good, size);
  bad[45] = 44;
  hurray_decoder* dec = hurray_decoder_new(HURRAY_NO_VALIDATE);
  CHECK_STATUS(hurray_decoder_feed(dec, bad, size, NULL), HURRAY_OK);
  hurray_decoder_free(dec);
  free(bad);
  free(good);
}

/* ---- Quantization and dequantization ----------------------------------- */

/* Scale of row r (float16 bits, little-endian): 0.25, 0.5, 0.75, 1.0. */
static const uint16_t kHalfScales[4] = {0x3400, 0x3800, 0x3A00, 0x3C00};
static const float kScales[4] = {0.25f, 0.5f, 0.75f, 1.0f};

static int Int4At(const uint8_t* data, size_t e) {
  int nibble = (e & 1) ? data[e / 2] >> 4 : data[e / 2] & 0xF;
  return nibble >= 8 ? nibble - 16 : nibble;
}

static void TestDequantize(void) {
  size_t size;
  uint8_t* bytes = ReadGolden("quant_per_block_int4_128x128.bin", &size);
  if (bytes == NULL) return;
  hurray_decoder* dec = hurray_decoder_new(0);
  CHECK_STATUS(hurray_decoder_feed(dec, bytes, size, NULL), HURRAY_OK);
  const hurray_descriptor* d = hurray_decoder_descriptor(dec);

  /* int4 [128, 128], per-block symmetric along axis 1, blocks of 128, one
   * float16 scale per row in buffer 1. */
  hurray_quantization q;
  CHECK_STATUS(hurray_descriptor_quantization(d, &q), HURRAY_OK);
  CHECK(q.scheme == HURRAY_SCHEME_PER_BLOCK_AFFINE);
  CHECK(q.scheme_version == 1);
  CHECK(q.symmetric == 1);
  CHECK(q.axis == 1);
  CHECK(q.block_size == 128);
  CHECK(q.scale_buffer_index == 1);
  CHECK(q.zero_point_buffer_index == 0xFFFFFFFFu);
  CHECK(q.scale_type_tag == 0x01); /* float16 */

  static uint8_t data[8192];
  static uint8_t scales[256];
  for (size_t k = 0; k < sizeof data; ++k) data[k] = (uint8_t)(k * 37 + 11);
  for (size_t r = 0; r < 128; ++r) {
    scales[2 * r] = (uint8_t)(kHalfScales[r % 4] & 0xFF);
    scales[2 * r + 1] = (uint8_t)(kHalfScales[r % 4] >> 8);
  }
  const uint8_t* buffers[2] = {data, scales};
  const uint64_t sizes[2] = {sizeof data, sizeof scales};
  uint64_t count = 0;
  CHECK_STATUS(hurray_dequantized_count(d, &count), HURRAY_OK);
  CHECK(count == 128 * 128);
  static float out[128 * 128];
  hurray_error e;
  CHECK_STATUS(hurray_dequantize(d, buffers, sizes, 2, out, count, 0, &e),
               HURRAY_OK);
  CHECK(e.status == HURRAY_OK);
  int wrong = 0;
  for (size_t i = 0; i < 128 * 128; ++i) {
    float want = (float)Int4At(data, i) * kScales[(i / 128) % 4];
    if (out[i] != want) ++wrong;
  }
  CHECK(wrong == 0);
  CHECK(out[0] == (float)Int4At(data, 0) * 0.25f);
  CHECK(out[128] == (float)Int4At(data, 128) * 0.5f);

  /* Caller errors. */
  CHECK_STATUS(hurray_dequantize(d, buffers, sizes, 2, out, count - 1, 0, &e),
               HURRAY_BUFFER_TOO_SMALL);
  CHECK(e.status == HURRAY_BUFFER_TOO_SMALL);
  CHECK_STATUS(hurray_dequantize(d, buffers, sizes, 1, out, count, 0, &e),
               HURRAY_INVALID_ARGUMENT);
  const uint64_t short_sizes[2] = {sizeof data - 1, sizeof scales};
  CHECK_STATUS(hurray_dequantize(d, buffers, short_sizes, 2, out, count, 0, &e),
               HURRAY_INVALID_ARGUMENT);

  /* A zero scale is a data-level rejection, at the index of its block. */
  scales[2 * 5] = 0;
  scales[2 * 5 + 1] = 0;
  CHECK_STATUS(hurray_dequantize(d, buffers, sizes, 2, out, count, 0, &e),
               HURRAY_REJECTED);
  CHECK_STR(e.rule_id, "QNT-PBA-12");
  CHECK(e.offset == 5);
  CHECK(e.offset_unit == HURRAY_OFFSET_BLOCK);
  CHECK(e.message[0] != '\0');

  /* Unquantized tensors do not dequantize. */
  size_t f32_size;
  uint8_t* f32 = ReadGolden("row_major_f32_3x4.bin", &f32_size);
  if (f32 != NULL) {
    hurray_decoder_reset(dec);
    CHECK_STATUS(hurray_decoder_feed(dec, f32, f32_size, NULL), HURRAY_OK);
    CHECK_STATUS(
        hurray_dequantized_count(hurray_decoder_descriptor(dec), &count),
        HURRAY_UNSUPPORTED);
    CHECK_STATUS(
        hurray_descriptor_quantization(hurray_decoder_descriptor(dec), &q),
        HURRAY_NOT_FOUND);
    free(f32);
  }
  hurray_decoder_free(dec);
  free(bytes);
}

/* ---- .hrry files -----------------------------------------------------------
 */

static void TestFile(void) {
  char path[1024];
  Runfile("corpus/golden/files/basic.hrry", path, sizeof path);
  hurray_file* f = NULL;
  hurray_error e;
  CHECK_STATUS(hurray_file_open(path, 0, &f, &e), HURRAY_OK);
  CHECK(f != NULL);
  if (f == NULL) return;
  CHECK(hurray_file_tensor_count(f) == 2);
  int seen = 0;
  for (size_t i = 0; i < hurray_file_tensor_count(f); ++i) {
    const char* name;
    size_t name_size;
    CHECK_STATUS(hurray_file_tensor_name(f, i, &name, &name_size), HURRAY_OK);
    if (name_size == 7 && memcmp(name, "weights", 7) == 0) seen |= 1;
    if (name_size == 4 && memcmp(name, "bias", 4) == 0) seen |= 2;
  }
  CHECK(seen == 3);

  hurray_tensor* t = NULL;
  CHECK_STATUS(hurray_file_lookup(f, "weights", 7, &t, &e), HURRAY_OK);
  const hurray_descriptor* d = hurray_tensor_descriptor(t);
  CHECK_STR(hurray_type_name(hurray_descriptor_type_tag(d)), "float32");
  CHECK_STR(hurray_layout_name(hurray_descriptor_layout_tag(d)), "row_major");
  uint64_t shape[2];
  uint32_t rank = 0;
  CHECK_STATUS(hurray_descriptor_shape(d, shape, 2, &rank), HURRAY_OK);
  CHECK(rank == 2 && shape[0] == 2 && shape[1] == 2);
  const uint8_t* data = NULL;
  uint64_t size = 0;
  CHECK_STATUS(hurray_tensor_buffer(t, 0, &data, &size, &e), HURRAY_OK);
  CHECK(size == 16 && data != NULL);
  if (data != NULL && size == 16) {
    float values[4];
    memcpy(values, data, sizeof values);
    /* The conformance file's weights are zeros. */
    for (int i = 0; i < 4; ++i) CHECK(values[i] == 0.0f);
  }
  CHECK_STATUS(hurray_tensor_buffer(t, 1, &data, &size, &e),
               HURRAY_INVALID_ARGUMENT);
  float out[4];
  CHECK_STATUS(hurray_tensor_dequantize(t, out, 4, 0, &e), HURRAY_UNSUPPORTED);
  hurray_tensor_free(t);

  CHECK_STATUS(hurray_file_lookup(f, "bias", 4, &t, &e), HURRAY_OK);
  d = hurray_tensor_descriptor(t);
  CHECK(hurray_descriptor_type_tag(d) == 0x10);
  CHECK(hurray_descriptor_rank(d) == 1);
  CHECK_STATUS(hurray_tensor_buffer(t, 0, &data, &size, &e), HURRAY_OK);
  CHECK(size == 3);
  hurray_tensor_free(t);

  t = (hurray_tensor*)&e; /* must be cleared on failure */
  CHECK_STATUS(hurray_file_lookup(f, "weight", 6, &t, &e), HURRAY_NOT_FOUND);
  CHECK(t == NULL);
  CHECK(e.status == HURRAY_NOT_FOUND);
  CHECK_STATUS(hurray_file_lookup(f, "weightsX", 7, &t, &e), HURRAY_OK);
  hurray_tensor_free(t); /* name_size counts, not the NUL */
  hurray_file_close(f);

  /* Missing file: an I/O error, no rule. */
  f = (hurray_file*)&e;
  CHECK_STATUS(hurray_file_open("/nonexistent/x.hrry", 0, &f, &e),
               HURRAY_IO_ERROR);
  CHECK(f == NULL);
  CHECK_STR(e.rule_id, "");
  CHECK(e.message[0] != '\0');

  /* The same file from memory. */
  size_t file_size;
  uint8_t* read = ReadFile("corpus/golden/files/basic.hrry", &file_size);
  /* Buffer views must sit at their declared alignment (BUF-19): the image
   * goes to memory aligned like a mapped file. */
  uint8_t* bytes = NULL;
  if (read != NULL) {
    bytes = aligned_alloc(64, (file_size + 63) / 64 * 64 + 64);
    if (bytes != NULL) memcpy(bytes, read, file_size);
    free(read);
  }
  if (bytes != NULL) {
    /* The same image one byte off: its views miss their alignment. */
    memmove(bytes + 1, bytes, file_size);
    CHECK_STATUS(hurray_file_open_memory(bytes + 1, file_size, 0, &f, &e),
                 HURRAY_OK);
    CHECK_STATUS(hurray_file_lookup(f, "bias", 4, &t, &e), HURRAY_OK);
    CHECK_STATUS(hurray_tensor_buffer(t, 0, &data, &size, &e), HURRAY_REJECTED);
    CHECK_STR(e.rule_id, "BUF-19");
    hurray_tensor_free(t);
    hurray_file_close(f);
    memmove(bytes, bytes + 1, file_size);
    CHECK_STATUS(hurray_file_open_memory(bytes, file_size, 0, &f, &e),
                 HURRAY_OK);
    CHECK(hurray_file_tensor_count(f) == 2);
    CHECK_STATUS(hurray_file_lookup(f, "bias", 4, &t, &e), HURRAY_OK);
    CHECK_STATUS(hurray_tensor_buffer(t, 0, &data, &size, &e), HURRAY_OK);
    CHECK(size == 3 && data != NULL && data >= bytes &&
          data + size <= bytes + file_size); /* a view, no copy */
    hurray_tensor_free(t);
    hurray_file_close(f);
    CHECK_STATUS(hurray_file_open_memory(bytes, 10, 0, &f, &e),
                 HURRAY_REJECTED);
    CHECK(f == NULL && e.rule_id[0] != '\0');
    CHECK_STATUS(hurray_file_open_memory(NULL, 1, 0, &f, &e),
                 HURRAY_INVALID_ARGUMENT);
  }

  /* A broken trailer magic: the rule and the absolute file offset. */
  const char* tmp = getenv("TEST_TMPDIR");
  char broken[1024];
  snprintf(broken, sizeof broken, "%s/broken.hrry", tmp != NULL ? tmp : "/tmp");
  if (bytes != NULL && file_size > 0) {
    bytes[file_size - 1] ^= 0xFF;
    FILE* w = fopen(broken, "wb");
    CHECK(w != NULL);
    if (w != NULL) {
      CHECK(fwrite(bytes, 1, file_size, w) == file_size);
      fclose(w);
      CHECK_STATUS(hurray_file_open(broken, 0, &f, &e), HURRAY_REJECTED);
      CHECK(f == NULL);
      CHECK_STR(e.rule_id, "FILE-TRL-01");
      CHECK(e.offset == file_size - 4);
      CHECK_STATUS(hurray_file_open_memory(bytes, file_size, 0, &f, &e),
                   HURRAY_REJECTED);
      CHECK_STR(e.rule_id, "FILE-TRL-01");
      CHECK(e.offset == file_size - 4);
    }
  }
  free(bytes);
}

/* ---- Stream reader ----------------------------------------------------------
 */

typedef struct {
  int descriptors;
  int tensor_ends;
  int ends;
  uint64_t bytes[2];
  uint32_t last_type_tag;
  int stop_at_descriptor;
  hurray_stream* self;
  hurray_status reentry;
  int free_self;
} Events;

static int OnDescriptor(void* user, const hurray_descriptor* d) {
  Events* ev = user;
  ++ev->descriptors;
  ev->last_type_tag = hurray_descriptor_type_tag(d);
  if (ev->self != NULL) ev->reentry = hurray_stream_feed(ev->self, NULL, 0);
  if (ev->free_self) hurray_stream_free(ev->self); /* deferred */
  return ev->stop_at_descriptor != 0 &&
         ev->descriptors >= ev->stop_at_descriptor;
}

static int OnPiece(void* user, uint32_t buffer, uint64_t offset,
                   const uint8_t* piece, size_t size) {
  Events* ev = user;
  (void)piece;
  if (buffer == 0 && ev->descriptors >= 1 && ev->descriptors <= 2) {
    /* Pieces of one buffer arrive in order, without gaps. */
    CHECK(offset == ev->bytes[ev->descriptors - 1]);
    ev->bytes[ev->descriptors - 1] += size;
  }
  return 0;
}

static int OnTensorEnd(void* user) {
  ++((Events*)user)->tensor_ends;
  return 0;
}

static void OnEnd(void* user) { ++((Events*)user)->ends; }

static void TestStream(void) {
  size_t a_size, b_size;
  uint8_t* a = ReadGolden("row_major_f32_3x4.bin", &a_size);
  uint8_t* b = ReadGolden("row_major_int8_5.bin", &b_size);
  if (a == NULL || b == NULL) {
    free(a);
    free(b);
    return;
  }
  /* Descriptor, 48 data bytes, descriptor, 5 data bytes. */
  const size_t total = a_size + 48 + b_size + 5;
  uint8_t* stream = calloc(total, 1);
  memcpy(stream, a, a_size);
  memcpy(stream + a_size + 48, b, b_size);

  Events ev;
  memset(&ev, 0, sizeof ev);
  hurray_stream_callbacks cb = {&ev, OnDescriptor, OnPiece, OnTensorEnd, OnEnd};
  hurray_stream* s = hurray_stream_new(&cb, 0);
  ev.self = s;
  for (size_t i = 0; i < total; ++i) {
    CHECK_STATUS(hurray_stream_feed(s, stream + i, 1), HURRAY_NEED_MORE);
  }
  CHECK_STATUS(hurray_stream_finish(s), HURRAY_OK);
  CHECK(ev.descriptors == 2);
  CHECK(ev.last_type_tag == 0x10);
  CHECK(ev.bytes[0] == 48 && ev.bytes[1] == 5);
  CHECK(ev.tensor_ends == 2);
  CHECK(ev.ends == 1);
  CHECK(ev.reentry == HURRAY_BAD_STATE);
  CHECK(hurray_stream_position(s) == total);
  CHECK(hurray_stream_tensors_completed(s) == 2);
  hurray_error e;
  CHECK_STATUS(hurray_stream_error(s, &e), HURRAY_OK);
  CHECK_STR(e.rule_id, "");
  hurray_stream_free(s);

  /* The last data byte missing: STREAM-EOF-BUFFER at the stream's end. */
  s = hurray_stream_new(NULL, 0);
  CHECK_STATUS(hurray_stream_feed(s, stream, total - 1), HURRAY_NEED_MORE);
  CHECK_STATUS(hurray_stream_finish(s), HURRAY_REJECTED);
  CHECK_STATUS(hurray_stream_error(s, &e), HURRAY_REJECTED);
  CHECK_STR(e.rule_id, "STREAM-EOF-BUFFER");
  CHECK(e.offset == total - 1);
  hurray_stream_free(s);

  /* A broken second descriptor: its rule at the absolute stream offset. */
  stream[a_size + 48 + 4] = 2; /* version_major */
  s = hurray_stream_new(NULL, 0);
  CHECK_STATUS(hurray_stream_feed(s, stream, total), HURRAY_REJECTED);
  CHECK_STATUS(hurray_stream_error(s, &e), HURRAY_REJECTED);
  CHECK_STR(e.rule_id, "DESC-HDR-03");
  CHECK(e.offset == a_size + 48 + 4);
  hurray_stream_free(s);
  stream[a_size + 48 + 4] = 1;

  /* A callback stops the reader. */
  memset(&ev, 0, sizeof ev);
  ev.stop_at_descriptor = 1;
  s = hurray_stream_new(&cb, 0);
  CHECK_STATUS(hurray_stream_feed(s, stream, total), HURRAY_CANCELLED);
  CHECK(ev.descriptors == 1);
  CHECK(ev.tensor_ends == 0);
  CHECK_STATUS(hurray_stream_feed(s, stream, 1), HURRAY_CANCELLED);
  CHECK_STATUS(hurray_stream_finish(s), HURRAY_CANCELLED);
  CHECK(ev.ends == 0);
  hurray_stream_free(s);

  /* A callback frees its own reader: the feed returns CANCELLED, and the
   * handle is gone (ASan checks nothing touches it afterwards). */
  memset(&ev, 0, sizeof ev);
  s = hurray_stream_new(&cb, 0);
  ev.self = s;
  ev.free_self = 1;
  CHECK_STATUS(hurray_stream_feed(s, stream, total), HURRAY_CANCELLED);
  CHECK(ev.descriptors == 1);
  CHECK(ev.tensor_ends == 0);

  free(stream);
  free(a);
  free(b);
}

/* ---- Versions and NULL arguments ---------------------------------------- */

static void TestVersionAndNulls(void) {
  CHECK(hurray_version() ==
        ((HURRAY_API_VERSION_MAJOR << 16) | (HURRAY_API_VERSION_MINOR << 8) |
         HURRAY_API_VERSION_PATCH));
  CHECK_STR(hurray_version_string(), HURRAY_VERSION_STRING);
  uint32_t major = 0, minor = 9;
  hurray_format_version(&major, &minor);
  CHECK(major == 1 && minor == 0);
  hurray_format_version(NULL, NULL);
  CHECK_STR(hurray_status_name(HURRAY_REJECTED), "REJECTED");
  CHECK_STR(hurray_status_name(-1), "UNKNOWN");
  CHECK_STR(hurray_type_name(0xEE), "");
  CHECK_STR(hurray_layout_name(0x01), "row_major");

  /* Every function takes NULL without crashing. */
  uint64_t u64 = 0;
  uint32_t u32 = 0;
  size_t sz = 0;
  const char* name = NULL;
  const uint8_t* data = NULL;
  hurray_error e;
  hurray_quantization q;
  CHECK(hurray_descriptor_rank(NULL) == 0);
  CHECK_STATUS(hurray_descriptor_shape(NULL, &u64, 1, &u32),
               HURRAY_INVALID_ARGUMENT);
  CHECK(hurray_descriptor_type_tag(NULL) == 0);
  CHECK(hurray_descriptor_layout_tag(NULL) == 0);
  CHECK(hurray_descriptor_flags(NULL) == 0);
  CHECK(hurray_descriptor_byte_offset(NULL) == 0);
  CHECK(hurray_descriptor_length(NULL) == 0);
  CHECK_STATUS(hurray_descriptor_element_count(NULL, &u64),
               HURRAY_INVALID_ARGUMENT);
  CHECK(hurray_descriptor_buffer_count(NULL) == 0);
  CHECK_STATUS(hurray_descriptor_buffer_size(NULL, 0, &u64),
               HURRAY_INVALID_ARGUMENT);
  CHECK(hurray_descriptor_quantization_scheme(NULL) == HURRAY_SCHEME_NONE);
  CHECK_STATUS(hurray_descriptor_quantization(NULL, &q),
               HURRAY_INVALID_ARGUMENT);

  hurray_decoder_free(NULL);
  CHECK_STATUS(hurray_decoder_feed(NULL, (const uint8_t*)&u32, 1, &sz),
               HURRAY_INVALID_ARGUMENT);
  CHECK_STATUS(hurray_decoder_finish(NULL), HURRAY_INVALID_ARGUMENT);
  hurray_decoder_reset(NULL);
  CHECK_STATUS(hurray_decoder_state(NULL), HURRAY_INVALID_ARGUMENT);
  CHECK(hurray_decoder_consumed(NULL) == 0);
  CHECK(hurray_decoder_descriptor(NULL) == NULL);
  CHECK_STR(hurray_decoder_rule_id(NULL), "");
  CHECK(hurray_decoder_offset(NULL) == 0);
  CHECK_STR(hurray_decoder_message(NULL), "");
  CHECK_STATUS(hurray_decoder_error(NULL, &e), HURRAY_INVALID_ARGUMENT);
  CHECK(e.status == HURRAY_INVALID_ARGUMENT);
  CHECK_STATUS(hurray_decoder_error(NULL, NULL), HURRAY_INVALID_ARGUMENT);
  hurray_decoder* dec = hurray_decoder_new(0);
  CHECK_STATUS(hurray_decoder_feed(dec, NULL, 3, NULL),
               HURRAY_INVALID_ARGUMENT);
  CHECK_STATUS(hurray_decoder_feed(dec, NULL, 0, NULL), HURRAY_NEED_MORE);
  CHECK_STATUS(hurray_decoder_error(dec, NULL), HURRAY_NEED_MORE);
  CHECK_STATUS(
      hurray_descriptor_shape(hurray_decoder_descriptor(dec), NULL, 0, NULL),
      HURRAY_INVALID_ARGUMENT);
  hurray_decoder_free(dec);

  hurray_file* f = (hurray_file*)&e;
  CHECK_STATUS(hurray_file_open(NULL, 0, &f, &e), HURRAY_INVALID_ARGUMENT);
  CHECK(f == NULL);
  CHECK_STATUS(hurray_file_open("x", 0, NULL, NULL), HURRAY_INVALID_ARGUMENT);
  hurray_file_close(NULL);
  CHECK(hurray_file_tensor_count(NULL) == 0);
  CHECK_STATUS(hurray_file_tensor_name(NULL, 0, &name, &sz),
               HURRAY_INVALID_ARGUMENT);
  hurray_tensor* t = NULL;
  CHECK_STATUS(hurray_file_lookup(NULL, "a", 1, &t, NULL),
               HURRAY_INVALID_ARGUMENT);
  hurray_tensor_free(NULL);
  CHECK(hurray_tensor_descriptor(NULL) == NULL);
  CHECK_STATUS(hurray_tensor_buffer(NULL, 0, &data, &u64, NULL),
               HURRAY_INVALID_ARGUMENT);
  CHECK_STATUS(hurray_dequantized_count(NULL, &u64), HURRAY_INVALID_ARGUMENT);
  CHECK_STATUS(hurray_dequantize(NULL, NULL, NULL, 0, NULL, 0, 0, NULL),
               HURRAY_INVALID_ARGUMENT);
  CHECK_STATUS(hurray_tensor_dequantize(NULL, NULL, 0, 0, &e),
               HURRAY_INVALID_ARGUMENT);

  hurray_stream_free(NULL);
  CHECK_STATUS(hurray_stream_feed(NULL, NULL, 0), HURRAY_INVALID_ARGUMENT);
  CHECK_STATUS(hurray_stream_finish(NULL), HURRAY_INVALID_ARGUMENT);
  CHECK_STATUS(hurray_stream_error(NULL, NULL), HURRAY_INVALID_ARGUMENT);
  CHECK(hurray_stream_position(NULL) == 0);
  CHECK(hurray_stream_tensors_completed(NULL) == 0);
  /* A stream without callbacks validates only; an empty one is fine. */
  hurray_stream* s = hurray_stream_new(NULL, HURRAY_PERMISSIVE);
  CHECK(s != NULL);
  CHECK_STATUS(hurray_stream_finish(s), HURRAY_OK);
  hurray_stream_free(s);
}

int main(void) {
  TestVersionAndNulls();
  TestGoldenOneShot();
  TestGoldenByteByByte();
  TestBackToBack();
  TestRejections();
  TestDequantize();
  TestFile();
  TestStream();
  return CheckResult("capi_test");
}
