/* JSON text of a cmocka unit test, parsed (header-only, static): text that
 * is not JSON is the test's own mistake and fails it, naming jansson's
 * reason and the text. */
#ifndef GS_TEST_JSON_H
#define GS_TEST_JSON_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>
#include <jansson.h>

/* New reference; never NULL. */
static inline json_t *gs_test_json(const char *text) {
  json_error_t e;
  json_t *v = json_loads(text, 0, &e);
  if (v == NULL)
    fail_msg("bad test JSON: %s: %s", e.text, text);
  return v;
}

#endif
