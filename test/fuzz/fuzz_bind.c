/* Fuzz target "bind": an ExtenderBindingArgs body, and the Error answers
 * built from whatever the decoder said about it. */
#include "fuzz.h"

#include "api.h"

static void check_dump(char *out) {
  json_t *doc;
  FUZZ_CHECK(out != NULL);
  doc = json_loads(out, 0, NULL);
  FUZZ_CHECK(json_is_object(doc) && json_is_string(json_object_get(doc, "Error")));
  json_decref(doc);
  free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  struct gs_api_bind_args b;
  struct gs_diag diag = {{0}, {0}};
  enum gs_err err;

  fuzz_init();
  err = gs_api_bind_args_decode((const char *)data, size, &b, &diag);
  FUZZ_CHECK_DIAG(err, diag);
  if (err == GS_EOK) {
    FUZZ_CHECK(b.pod_name[0] != '\0' && b.pod_ns[0] != '\0' && b.node[0] != '\0');
    FUZZ_CHECK(strlen(b.pod_name) <= GS_NAME_MAX && strlen(b.pod_ns) <= GS_NS_MAX &&
               strlen(b.pod_uid) <= GS_UID_MAX && strlen(b.node) <= GS_NAME_MAX);
    check_dump(gs_api_bind_result_dump(b.pod_name));
  } else {
    check_dump(gs_api_bind_result_dump(diag.text));
    check_dump(gs_api_error_dump(diag.where));
  }
  return 0;
}
