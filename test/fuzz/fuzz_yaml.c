/* Fuzz target "yaml": YAML text → gs_yaml_parse, read both typed (demo
 * files) and with GS__YAML_PLAIN_TEXT (settings files). What it returns
 * must serialise as JSON and read back equal; an object is also tried as
 * ConfigMap data (gs_config_apply_data). */
#include "fuzz.h"

#include "config_int.h"

static void parse(const uint8_t *data, size_t size, unsigned flags) {
  struct gs_diag diag = {{0}, {0}};
  struct gs_policy policy, before;
  json_t *doc = NULL, *again;
  char *text;
  enum gs_err err;

  err = gs__yaml_parse((const char *)data, size, "fuzz.yaml", flags, &doc, &diag);
  FUZZ_CHECK_DIAG(err, diag);
  if (err != GS_EOK)
    return;
  FUZZ_CHECK(doc != NULL);
  text = json_dumps(doc, JSON_ENCODE_ANY | JSON_COMPACT);
  FUZZ_CHECK(text != NULL);
  again = json_loads(text, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
  FUZZ_CHECK(again != NULL && json_equal(doc, again));
  json_decref(again);
  free(text);
  if (json_is_object(doc)) {
    gs_policy_init(&policy);
    before = policy;
    memset(&diag, 0, sizeof diag);
    err = gs_config_apply_data(&policy, doc, &diag);
    FUZZ_CHECK_DIAG(err, diag);
    if (err != GS_EOK) /* an invalid value leaves the policy unchanged */
      FUZZ_CHECK(memcmp(&before, &policy, sizeof policy) == 0);
    else
      FUZZ_CHECK(policy.unit_mib == GS_UNIT_GIB || policy.unit_mib == GS_UNIT_128MIB);
  }
  json_decref(doc);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_init();
  parse(data, size, 0);
  parse(data, size, GS__YAML_PLAIN_TEXT);
  return 0;
}
