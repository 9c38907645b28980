/* ingest SOURCE [--pull]: reads SOURCE (a .hrry file or bare stream, "-",
 * tcp://HOST:PORT[/names] or an https:// URL) through libhurray's ingest and
 * prints one line per tensor:
 *
 *   name<TAB>n_values<TAB>sum
 *
 * the sum of its dequantized float32 values (logical row-major order) added
 * in a double, printed with %.9g. A tensor without a name (a bare stream)
 * is "tensor_<index>"; bytes of a name that are not printable ASCII are
 * printed as \xNN. --pull uses hurray_ingest_open / _next / _close instead
 * of the callback. Exit 0 when the input is valid, 1 when it is rejected
 * (the rule id and offset on stderr), 2 otherwise. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "hurray.h"

static int print_tensor(void* user, const hurray_ingest_tensor* t) {
  (void)user;
  double sum = 0;
  for (uint64_t i = 0; i < t->value_count; ++i) sum += t->values[i];
  if (t->name_size == 0) {
    printf("tensor_%" PRIu64, t->index);
  } else {
    for (size_t i = 0; i < t->name_size; ++i) {
      const unsigned char c = (unsigned char)t->name[i];
      if (c >= 0x20 && c < 0x7f && c != '\\') {
        putchar(c);
      } else {
        printf("\\x%02x", c);
      }
    }
  }
  printf("\t%" PRIu64 "\t%.9g\n", t->value_count, sum);
  return 0;
}

static int exit_code(hurray_status s, const hurray_error* e) {
  if (s == HURRAY_OK || s == HURRAY_END) return 0;
  if (e->rule_id[0] != '\0') {
    fprintf(stderr, "ingest: %s: %s at byte %" PRIu64 ": %s\n",
            hurray_status_name(s), e->rule_id, e->offset, e->message);
  } else {
    fprintf(stderr, "ingest: %s: %s\n", hurray_status_name(s), e->message);
  }
  return s == HURRAY_REJECTED ? 1 : 2;
}

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3 || (argc == 3 && strcmp(argv[2], "--pull") != 0)) {
    fprintf(stderr, "usage: ingest SOURCE [--pull]\n");
    return 2;
  }
  hurray_ingest_options options;
  hurray_ingest_options_init(&options);
  hurray_error error;
  if (argc == 2) {
    hurray_ingest_callbacks callbacks;
    memset(&callbacks, 0, sizeof callbacks);
    callbacks.on_tensor = print_tensor;
    const hurray_status s =
        hurray_ingest(argv[1], &options, &callbacks, &error);
    return exit_code(s, &error);
  }
  hurray_ingest_reader* ingest = NULL;
  hurray_status s = hurray_ingest_open(argv[1], &options, &ingest, &error);
  if (s != HURRAY_OK) return exit_code(s, &error);
  const hurray_ingest_tensor* t = NULL;
  while ((s = hurray_ingest_next(ingest, &t, &error)) == HURRAY_OK) {
    print_tensor(NULL, t);
  }
  hurray_ingest_close(ingest);
  return exit_code(s, &error);
}
