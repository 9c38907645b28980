/* hurray_convert (hurray.h 1.2): a safetensors file (with quantize, skip and
 * kv), a GGUF file (F32 and Q8_0) and a sharded model converted, the report
 * checked and each output read back through hurray_file_open; then the
 * refusals: missing input, bad scheme, options of a wrong size, a bad
 * alignment, a refused input, an unsupported GGUF type, a cancelled run.
 * Plain C11 against libhurray.so; the inputs are written here. */
#include <sys/stat.h>

#include "capi/testing/c_check.h"
#include "hurray.h"

static char dir[900];

static void PathOf(const char* name, char* out, size_t size) {
  snprintf(out, size, "%s/%s", dir, name);
}

static void WriteBytes(const char* name, const void* bytes, size_t size) {
  char path[1024];
  PathOf(name, path, sizeof path);
  FILE* f = fopen(path, "wb");
  CHECK(f != NULL);
  if (f == NULL) return;
  CHECK(fwrite(bytes, 1, size, f) == size);
  fclose(f);
}

static int Exists(const char* name) {
  char path[1024];
  struct stat st;
  PathOf(name, path, sizeof path);
  return stat(path, &st) == 0;
}

static void PutU32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = (uint8_t)(v >> (8 * i));
}
static void PutU64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = (uint8_t)(v >> (8 * i));
}

/* A safetensors file: the JSON header (padded to 8 with spaces), then
 * `data`. */
static void WriteSafetensors(const char* name, const char* header,
                             const void* data, size_t data_size) {
  static uint8_t buf[1 << 16];
  size_t n = strlen(header);
  size_t padded = (n + 7) / 8 * 8;
  PutU64(buf, padded);
  memcpy(buf + 8, header, n);
  memset(buf + 8 + n, ' ', padded - n);
  memcpy(buf + 8 + padded, data, data_size);
  WriteBytes(name, buf, 8 + padded + data_size);
}

/* A GGUF v3 file, alignment 32: tensors (name, 2 ne, type, data). */
typedef struct {
  const char* name;
  uint64_t ne0, ne1;
  uint32_t type;
  const uint8_t* data;
  size_t size;
} GgufTensor;

static void WriteGguf(const char* name, const GgufTensor* t, int count) {
  static uint8_t buf[1 << 16];
  size_t at = 0;
  memcpy(buf, "GGUF", 4);
  PutU32(buf + 4, 3);
  PutU64(buf + 8, (uint64_t)count);
  PutU64(buf + 16, 0); /* no KV pairs */
  at = 24;
  uint64_t offset = 0;
  for (int i = 0; i < count; ++i) {
    size_t len = strlen(t[i].name);
    PutU64(buf + at, len);
    memcpy(buf + at + 8, t[i].name, len);
    at += 8 + len;
    PutU32(buf + at, 2);
    PutU64(buf + at + 4, t[i].ne0);
    PutU64(buf + at + 12, t[i].ne1);
    PutU32(buf + at + 20, t[i].type);
    PutU64(buf + at + 24, offset);
    at += 32;
    offset += (t[i].size + 31) / 32 * 32;
  }
  while (at % 32 != 0) buf[at++] = 0;
  for (int i = 0; i < count; ++i) {
    memcpy(buf + at, t[i].data, t[i].size);
    at += t[i].size;
    while (at % 32 != 0) buf[at++] = 0;
  }
  WriteBytes(name, buf, at);
}

/* What on_tensor saw. */
typedef struct {
  int count;
  int stop_after; /* 0: never */
  char names[8][32];
  char types[8][48];
  uint32_t exact[8], quantized[8], rank[8];
  double max_abs[8];
  char notes[8][64];
  int notices;
  char notice[128];
} Seen;

static int OnTensor(void* user, const hurray_convert_tensor* t) {
  Seen* s = (Seen*)user;
  CHECK(t->size == sizeof *t);
  CHECK(t->index == (uint64_t)s->count);
  CHECK(strlen(t->name) == t->name_size);
  if (s->count < 8) {
    snprintf(s->names[s->count], 32, "%s", t->name);
    snprintf(s->types[s->count], 48, "%s>%s>%s", t->source_type, t->type,
             t->scheme);
    s->exact[s->count] = t->exact;
    s->quantized[s->count] = t->quantized;
    s->rank[s->count] = t->rank;
    s->max_abs[s->count] = t->max_abs_error;
    snprintf(s->notes[s->count], 64, "%s", t->note);
  }
  ++s->count;
  return s->stop_after != 0 && s->count >= s->stop_after;
}

/* The float32 data of tensor `name` of an output, through the file API
 * (dequantized when quantized); returns the element count read. */
static size_t ReadBack(const char* file_name, const char* name, float* out,
                       size_t cap) {
  char path[1024];
  hurray_file* f = NULL;
  hurray_tensor* t = NULL;
  hurray_error e;
  size_t n = 0;
  PathOf(file_name, path, sizeof path);
  CHECK_STATUS(hurray_file_open(path, 0, &f, &e), HURRAY_OK);
  if (f == NULL) return 0;
  CHECK_STATUS(hurray_file_lookup(f, name, strlen(name), &t, &e), HURRAY_OK);
  if (t != NULL) {
    const hurray_descriptor* d = hurray_tensor_descriptor(t);
    uint64_t count = 0;
    if (hurray_descriptor_quantization_scheme(d) != HURRAY_SCHEME_NONE) {
      CHECK_STATUS(hurray_dequantized_count(d, &count), HURRAY_OK);
      CHECK(count <= cap);
      CHECK_STATUS(hurray_tensor_dequantize(t, out, cap, 0, &e), HURRAY_OK);
      n = (size_t)count;
    } else {
      const uint8_t* data = NULL;
      uint64_t size = 0;
      CHECK(hurray_descriptor_type_tag(d) == 0x03); /* float32 */
      CHECK_STATUS(hurray_tensor_buffer(t, 0, &data, &size, &e), HURRAY_OK);
      CHECK(size / 4 <= cap);
      if (data != NULL) memcpy(out, data, (size_t)size);
      n = (size_t)(size / 4);
    }
    hurray_tensor_free(t);
  }
  hurray_file_close(f);
  return n;
}

static void OnNotice(void* user, const char* text) {
  Seen* s = (Seen*)user;
  ++s->notices;
  snprintf(s->notice, sizeof s->notice, "%s", text);
}

static hurray_status Convert(const char* in, const char* out,
                             const hurray_convert_options* o, Seen* seen,
                             hurray_convert_report* r, hurray_error* e) {
  char ip[1024], op[1024];
  hurray_convert_callbacks cb;
  memset(&cb, 0, sizeof cb);
  cb.user = seen;
  cb.on_tensor = OnTensor;
  cb.on_notice = OnNotice;
  PathOf(in, ip, sizeof ip);
  PathOf(out, op, sizeof op);
  if (seen != NULL) memset(seen, 0, sizeof *seen);
  return hurray_convert(ip, op, o, seen != NULL ? &cb : NULL, r, e);
}

static float w_values[2 * 64], s_values[2 * 32], b_values[3];

static void SafetensorsCases(void) {
  static uint8_t data[sizeof w_values + sizeof s_values + sizeof b_values];
  for (int i = 0; i < 128; ++i) w_values[i] = (float)i * 0.25f - 16.0f;
  for (int i = 0; i < 64; ++i) s_values[i] = (float)(i % 7) - 3.0f;
  for (int i = 0; i < 3; ++i) b_values[i] = (float)i + 0.5f;
  memcpy(data, w_values, sizeof w_values);
  memcpy(data + sizeof w_values, s_values, sizeof s_values);
  memcpy(data + sizeof w_values + sizeof s_values, b_values, sizeof b_values);
  WriteSafetensors(
      "m.safetensors",
      "{\"w\":{\"dtype\":\"F32\",\"shape\":[2,64],\"data_offsets\":[0,512]},"
      "\"s\":{\"dtype\":\"F32\",\"shape\":[2,32],\"data_offsets\":[512,768]},"
      "\"b\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[768,780]}}",
      data, sizeof data);

  /* Lossless, default options. */
  Seen seen;
  hurray_convert_report r;
  hurray_error e;
  memset(&r, 0, sizeof r);
  r.size = sizeof r;
  CHECK_STATUS(Convert("m.safetensors", "plain.hrry", NULL, &seen, &r, &e),
               HURRAY_OK);
  CHECK_STR(r.format, "safetensors");
  CHECK(r.tensor_count == 3);
  CHECK(r.kv_entries == 0);
  CHECK(r.bytes_written > 780 && r.padding_bytes > 0);
  CHECK(seen.count == 3);
  CHECK_STR(seen.names[0], "w");
  CHECK_STR(seen.types[0], "F32>float32>");
  CHECK(seen.exact[0] == 1 && seen.quantized[0] == 0 && seen.rank[0] == 2);
  CHECK(seen.max_abs[0] == 0);
  float got[256];
  CHECK(ReadBack("plain.hrry", "w", got, 256) == 128);
  CHECK(memcmp(got, w_values, sizeof w_values) == 0);
  CHECK(ReadBack("plain.hrry", "b", got, 256) == 3);
  CHECK(memcmp(got, b_values, sizeof b_values) == 0);

  /* quantize, skip, kv, a 2 MiB data alignment, a small chunk. */
  hurray_convert_options o;
  hurray_convert_options_init(&o);
  const char* skip[] = {"s*"};
  const char* keys[] = {"author", "license"};
  const char* values[] = {"capi test", "MIT"};
  o.quantize = "per_block:int8:32";
  o.skip = skip;
  o.skip_count = 1;
  o.kv_keys = keys;
  o.kv_values = values;
  o.kv_count = 2;
  o.data_alignment = 2u << 20;
  o.chunk_size = 4096;
  CHECK_STATUS(Convert("m.safetensors", "q.hrry", &o, &seen, &r, &e),
               HURRAY_OK);
  CHECK(r.kv_entries == 2);
  CHECK(seen.count == 3);
  CHECK_STR(seen.types[0], "F32>int8>per_block_affine");
  CHECK(seen.exact[0] == 0 && seen.quantized[0] == 1);
  CHECK(seen.max_abs[0] > 0 && seen.max_abs[0] < 0.25);
  CHECK_STR(seen.names[1], "s");
  CHECK(seen.exact[1] == 1 && seen.quantized[1] == 0);
  CHECK(strstr(seen.notes[1], "skip") != NULL);
  CHECK(strstr(seen.notes[2], "1-D") != NULL);
  CHECK(ReadBack("q.hrry", "w", got, 256) == 128);
  for (int i = 0; i < 128; ++i) {
    double d = (double)got[i] - (double)w_values[i];
    CHECK(d <= seen.max_abs[0] && -d <= seen.max_abs[0]);
  }
  CHECK(ReadBack("q.hrry", "s", got, 256) == 64);
  CHECK(memcmp(got, s_values, sizeof s_values) == 0);
  {
    char path[1024];
    uint8_t head[24];
    PathOf("q.hrry", path, sizeof path);
    FILE* f = fopen(path, "rb");
    CHECK(f != NULL && fread(head, 1, sizeof head, f) == sizeof head);
    if (f != NULL) fclose(f);
    CHECK((head[16] | head[17] << 8 | head[18] << 16 |
           (uint32_t)head[19] << 24) == (2u << 20));
  }

  /* A sharded model: a directory holding model.safetensors.index.json. */
  char shards[1024];
  PathOf("shards", shards, sizeof shards);
  CHECK(mkdir(shards, 0755) == 0);
  WriteSafetensors(
      "shards/a.safetensors",
      "{\"w\":{\"dtype\":\"F32\",\"shape\":[2,64],\"data_offsets\":[0,512]}}",
      w_values, sizeof w_values);
  WriteSafetensors(
      "shards/b.safetensors",
      "{\"b\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,12]}}",
      b_values, sizeof b_values);
  const char* index =
      "{\"metadata\":{\"total_size\":999},\"weight_map\":{\"w\":"
      "\"a.safetensors\",\"b\":\"b.safetensors\"}}";
  WriteBytes("shards/model.safetensors.index.json", index, strlen(index));
  CHECK_STATUS(Convert("shards", "sharded.hrry", NULL, &seen, &r, &e),
               HURRAY_OK);
  CHECK(r.tensor_count == 2 && seen.count == 2);
  CHECK(seen.notices == 1 && strstr(seen.notice, "total_size") != NULL);
  CHECK(ReadBack("sharded.hrry", "b", got, 256) == 3);
  CHECK(memcmp(got, b_values, sizeof b_values) == 0);
}

static void GgufCases(void) {
  /* F32 [2 x 4] and Q8_0 [2 x 32]: two blocks, scales 1.0 and 0.5. */
  float f[8] = {1, -2, 3.5f, 4, 0, -0.25f, 7, 8};
  uint8_t q8[2 * 34];
  for (int b = 0; b < 2; ++b) {
    q8[b * 34] = 0x00;
    q8[b * 34 + 1] = b == 0 ? 0x3C : 0x38; /* float16 1.0, 0.5 */
    for (int i = 0; i < 32; ++i) q8[b * 34 + 2 + i] = (uint8_t)(int8_t)(i - 16);
  }
  GgufTensor t[2] = {{"f", 4, 2, 0, (const uint8_t*)f, sizeof f},
                     {"q", 32, 2, 8, q8, sizeof q8}};
  WriteGguf("m.gguf", t, 2);
  Seen seen;
  hurray_convert_report r;
  hurray_error e;
  memset(&r, 0, sizeof r);
  r.size = sizeof r;
  CHECK_STATUS(Convert("m.gguf", "g.hrry", NULL, &seen, &r, &e), HURRAY_OK);
  CHECK_STR(r.format, "gguf");
  CHECK(r.tensor_count == 2 && seen.count == 2);
  CHECK_STR(seen.types[0], "F32>float32>");
  CHECK_STR(seen.types[1], "Q8_0>int8>per_block_affine");
  CHECK(seen.exact[1] == 1 && seen.quantized[1] == 0);
  float got[64];
  CHECK(ReadBack("g.hrry", "f", got, 64) == 8);
  CHECK(memcmp(got, f, sizeof f) == 0);
  CHECK(ReadBack("g.hrry", "q", got, 64) == 64);
  for (int i = 0; i < 64; ++i) {
    CHECK(got[i] == (float)(i % 32 - 16) * (i < 32 ? 1.0f : 0.5f));
  }

  /* Q4_1 has no Hurray form: UNSUPPORTED without requantize, converted
   * (approximately) with it. */
  uint8_t q41[20 * 2];
  memset(q41, 0, sizeof q41);
  for (int b = 0; b < 2; ++b) q41[b * 20 + 1] = 0x3C; /* d = 1.0, m = 0 */
  GgufTensor u = {"u", 32, 2, 3, q41, sizeof q41};
  WriteGguf("q41.gguf", &u, 1);
  CHECK_STATUS(Convert("q41.gguf", "u.hrry", NULL, NULL, NULL, &e),
               HURRAY_UNSUPPORTED);
  CHECK(strstr(e.message, "Q4_1") != NULL);
  CHECK(!Exists("u.hrry"));
  hurray_convert_options o;
  hurray_convert_options_init(&o);
  o.requantize = "per_block:int8:32";
  CHECK_STATUS(Convert("q41.gguf", "u.hrry", &o, &seen, NULL, &e), HURRAY_OK);
  CHECK(seen.count == 1 && seen.exact[0] == 0 && seen.quantized[0] == 1);
}

static void Refusals(void) {
  hurray_convert_options o;
  hurray_convert_report r;
  hurray_error e;
  Seen seen;
  memset(&r, 0, sizeof r);
  r.size = sizeof r;

  hurray_convert_options_init(NULL);
  hurray_convert_options_init(&o);
  CHECK(o.size == sizeof o);
  CHECK(o.quantize == NULL && o.data_alignment == 0 && o.chunk_size == 0);

  CHECK_STATUS(hurray_convert(NULL, "x.hrry", NULL, NULL, NULL, &e),
               HURRAY_INVALID_ARGUMENT);
  CHECK_STATUS(hurray_convert("x", NULL, NULL, NULL, NULL, NULL),
               HURRAY_INVALID_ARGUMENT);
  CHECK_STATUS(Convert("missing.safetensors", "x.hrry", NULL, NULL, NULL, &e),
               HURRAY_IO_ERROR);
  CHECK(e.rule_id[0] == '\0');
  CHECK(!Exists("x.hrry"));

  o.quantize = "per_block:int9";
  CHECK_STATUS(Convert("m.safetensors", "x.hrry", &o, NULL, NULL, &e),
               HURRAY_INVALID_ARGUMENT);
  CHECK(strstr(e.message, "quantize") != NULL);
  hurray_convert_options_init(&o);
  o.requantize = "bogus";
  CHECK_STATUS(Convert("m.safetensors", "x.hrry", &o, NULL, NULL, &e),
               HURRAY_INVALID_ARGUMENT);
  hurray_convert_options_init(&o);
  o.data_alignment = 8192 + 4096;
  CHECK_STATUS(Convert("m.safetensors", "x.hrry", &o, NULL, NULL, &e),
               HURRAY_INVALID_ARGUMENT);
  hurray_convert_options_init(&o);
  o.kv_count = 1; /* with NULL keys */
  CHECK_STATUS(Convert("m.safetensors", "x.hrry", &o, NULL, NULL, &e),
               HURRAY_INVALID_ARGUMENT);
  hurray_convert_options_init(&o);
  o.size = 8; /* smaller than any hurray_convert_options */
  CHECK_STATUS(Convert("m.safetensors", "x.hrry", &o, NULL, NULL, &e),
               HURRAY_INVALID_ARGUMENT);
  CHECK(!Exists("x.hrry"));
  r.size = 4;
  CHECK_STATUS(Convert("m.safetensors", "x.hrry", NULL, NULL, &r, &e),
               HURRAY_INVALID_ARGUMENT);
  r.size = sizeof r;

  /* A newer header's larger struct: taken when its extra bytes are zero. */
  struct {
    hurray_convert_options o;
    uint64_t newer;
  } big;
  memset(&big, 0, sizeof big);
  hurray_convert_options_init(&big.o);
  big.o.size = sizeof big;
  CHECK_STATUS(Convert("m.safetensors", "x.hrry", &big.o, NULL, NULL, &e),
               HURRAY_OK);
  big.newer = 1;
  CHECK_STATUS(Convert("m.safetensors", "y.hrry", &big.o, NULL, NULL, &e),
               HURRAY_INVALID_ARGUMENT);
  CHECK(!Exists("y.hrry"));

  /* Refused inputs. */
  WriteBytes("junk.bin", "not a model file at all, not at all.", 36);
  CHECK_STATUS(Convert("junk.bin", "y.hrry", NULL, NULL, NULL, &e),
               HURRAY_REJECTED);
  CHECK(!Exists("y.hrry"));
  hurray_convert_options_init(&o);
  o.max_buffer_bytes = 64;
  CHECK_STATUS(Convert("m.safetensors", "y.hrry", &o, NULL, NULL, &e),
               HURRAY_REJECTED);
  CHECK_STR(e.rule_id, "LIMIT-BUFFER-BYTES");
  CHECK(!Exists("y.hrry"));
  hurray_convert_options_init(&o);
  o.max_safetensors_header_bytes = 16;
  CHECK_STATUS(Convert("m.safetensors", "y.hrry", &o, NULL, NULL, &e),
               HURRAY_REJECTED);
  CHECK(!Exists("y.hrry"));

  /* An output directory that does not exist: IO_ERROR. */
  CHECK_STATUS(
      Convert("m.safetensors", "no/such/dir.hrry", NULL, NULL, NULL, &e),
      HURRAY_IO_ERROR);

  /* on_tensor asks to stop: CANCELLED, and what was at the output stays. */
  WriteBytes("keep.hrry", "old", 3);
  memset(&seen, 0, sizeof seen);
  seen.stop_after = 1;
  hurray_convert_callbacks cb;
  memset(&cb, 0, sizeof cb);
  cb.user = &seen;
  cb.on_tensor = OnTensor;
  char ip[1024], op[1024];
  PathOf("m.safetensors", ip, sizeof ip);
  PathOf("keep.hrry", op, sizeof op);
  CHECK_STATUS(hurray_convert(ip, op, NULL, &cb, NULL, &e), HURRAY_CANCELLED);
  CHECK(seen.count == 1);
  struct stat st;
  CHECK(stat(op, &st) == 0 && st.st_size == 3);
}

int main(void) {
  const char* tmp = getenv("TEST_TMPDIR");
  snprintf(dir, sizeof dir, "%s/convert_capi", tmp != NULL ? tmp : "/tmp");
  mkdir(dir, 0755);
  CHECK(hurray_version() >> 8 == ((1u << 8) | 2u));
  SafetensorsCases();
  GgufCases();
  Refusals();
  return CheckResult("convert_capi_test");
}
