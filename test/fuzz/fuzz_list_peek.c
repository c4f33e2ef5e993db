/* Fuzz target "list_peek": a list reply → gs__kube_list_peek_continue, the
 * token read ahead of the parse (src/k8s/kube_util.c). Besides no crash:
 * when the whole body is one JSON object without duplicate keys, a token
 * read ahead is that object's metadata.continue (the read-ahead may give
 * none, never another one). */
#include "fuzz.h"

#include "kube_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *got;
  json_t *doc;

  fuzz_init();
  got = gs__kube_list_peek_continue((const char *)data, size);
  if (got == NULL)
    return 0;
  FUZZ_CHECK(got[0] != '\0');
  doc = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, NULL);
  if (json_is_object(doc)) {
    const json_t *c = json_object_get(json_object_get(doc, "metadata"), "continue");
    FUZZ_CHECK(json_is_string(c));
    FUZZ_CHECK(strcmp(json_string_value(c), got) == 0);
  }
  json_decref(doc);
  free(got);
  return 0;
}
