/* The ingest functions of hurray.h with wrong arguments: NULL everywhere, a
 * bad option, an options struct of an older (smaller) size, a missing file
 * through both forms, close without next. Plain C11 against libhurray.so. */
#include "capi/testing/c_check.h"
#include "hurray.h"

int main(void) {
  hurray_error e;
  hurray_ingest_options o;
  hurray_ingest_options_init(NULL);
  hurray_ingest_options_init(&o);
  CHECK(o.size == sizeof o);
  CHECK(o.want_values == 1);
  CHECK(o.idle_timeout_seconds < 0);

  CHECK(hurray_ingest(NULL, NULL, NULL, &e) == HURRAY_INVALID_ARGUMENT);
  CHECK(hurray_ingest(NULL, NULL, NULL, NULL) == HURRAY_INVALID_ARGUMENT);
  o.format = "tiff";
  CHECK(hurray_ingest("x.hrry", &o, NULL, &e) == HURRAY_INVALID_ARGUMENT);
  hurray_ingest_options_init(&o);
  o.tensor_count = 2; /* with tensors NULL */
  CHECK(hurray_ingest("x.hrry", &o, NULL, &e) == HURRAY_INVALID_ARGUMENT);
  hurray_ingest_options_init(&o);
  o.insecure = 1; /* not an http(s) source */
  CHECK(hurray_ingest("x.hrry", &o, NULL, &e) == HURRAY_INVALID_ARGUMENT);
  CHECK(hurray_ingest("tcp://nohostport", NULL, NULL, &e) ==
        HURRAY_INVALID_ARGUMENT);
  hurray_ingest_options_init(&o);
  CHECK(o.connections == 0);
  o.connections = 2; /* not an http(s) source */
  CHECK(hurray_ingest("x.hrry", &o, NULL, &e) == HURRAY_INVALID_ARGUMENT);
  CHECK(strstr(e.message, "--connections") != NULL);
  o.connections = 33;
  CHECK(hurray_ingest("https://127.0.0.1:9/x.hrry", &o, NULL, &e) ==
        HURRAY_INVALID_ARGUMENT);
  o.connections = 0xffffffffu;
  CHECK(hurray_ingest("https://127.0.0.1:9/x.hrry", &o, NULL, &e) ==
        HURRAY_INVALID_ARGUMENT);

  /* An older caller's struct: only `size` and `flags` known; the fields
   * after them keep their defaults whatever the memory holds. */
  hurray_ingest_options old;
  memset(&old, 0xff, sizeof old);
  old.size = 2 * sizeof(uint32_t);
  old.flags = 0;
  CHECK(hurray_ingest("/nonexistent/x.hrry", &old, NULL, &e) ==
        HURRAY_IO_ERROR);
  CHECK(strcmp(e.message, "cannot open: No such file or directory") == 0);
  CHECK(e.rule_id[0] == '\0');

  hurray_ingest_reader* r = NULL;
  const hurray_ingest_tensor* t = NULL;
  CHECK(hurray_ingest_open(NULL, NULL, &r, &e) == HURRAY_INVALID_ARGUMENT);
  CHECK(r == NULL);
  CHECK(hurray_ingest_open("x", NULL, NULL, &e) == HURRAY_INVALID_ARGUMENT);
  CHECK(hurray_ingest_next(NULL, &t, &e) == HURRAY_INVALID_ARGUMENT);
  CHECK(hurray_ingest_bytes(NULL) == 0);
  hurray_ingest_close(NULL);

  CHECK(hurray_ingest_open("/nonexistent/x.hrry", NULL, &r, &e) == HURRAY_OK);
  CHECK(r != NULL);
  CHECK(hurray_ingest_next(r, NULL, &e) == HURRAY_INVALID_ARGUMENT);
  CHECK(hurray_ingest_next(r, &t, &e) == HURRAY_IO_ERROR);
  CHECK(t == NULL);
  CHECK(hurray_ingest_next(r, &t, &e) == HURRAY_IO_ERROR); /* again */
  hurray_ingest_close(r);

  /* Closed before any next: the reader thread stops. */
  CHECK(hurray_ingest_open("/nonexistent/y.hrry", NULL, &r, &e) == HURRAY_OK);
  hurray_ingest_close(r);

  return CheckResult("ingest_capi_test");
}
