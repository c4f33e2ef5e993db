/* Fuzz target "quantity": Kubernetes quantities that must be whole
 * numbers (gs_api_quantity_whole_str, and _diag on a JSON value). Plain
 * forms (digits with an optional suffix k M G T P E Ki Mi Gi Ti Pi Ei) are
 * checked against a 128-bit reference. */
#include "fuzz.h"

#include "api.h"

__extension__ typedef unsigned __int128 u128;

/* Reference for [+]digits[suffix]; false when the text is not of that form
 * or too long for 128 bits. */
static bool ref_value(const char *s, u128 *ret) {
  static const char *const suf[] = {"",   "k",  "M",  "G",  "T",  "P",  "E",
                                    "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};
  u128 v = 0, mul = 1;
  size_t nd = 0;
  if (*s == '+')
    s++;
  for (; *s >= '0' && *s <= '9'; s++, nd++) {
    if (nd >= 20)
      return false;
    v = v * 10 + (unsigned)(*s - '0');
  }
  if (nd == 0)
    return false;
  for (size_t i = 0; i < sizeof suf / sizeof suf[0]; i++) {
    if (strcmp(s, suf[i]) != 0)
      continue;
    for (size_t k = 0; k < (i <= 6 ? i : i - 6); k++)
      mul *= i <= 6 ? 1000u : 1024u;
    *ret = v * mul;
    return true;
  }
  return false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  struct gs_diag diag = {{0}, {0}};
  char *text = fuzz_cstr(data, size);
  uint64_t v = UINT64_MAX;
  u128 want;
  json_t *j;
  enum gs_err err;

  fuzz_init();
  err = gs_api_quantity_whole_str(text, "q", &v, &diag);
  FUZZ_CHECK_DIAG(err, diag);
  FUZZ_CHECK(err == GS_EOK || err == GS_EPARSE || err == GS_ERANGE);
  if (err == GS_EOK)
    FUZZ_CHECK(v <= GS_API_QUANTITY_MAX);
  if (strlen(text) == size && size <= 64 && ref_value(text, &want)) {
    if (want <= GS_API_QUANTITY_MAX)
      FUZZ_CHECK(err == GS_EOK && v == (uint64_t)want);
    else
      FUZZ_CHECK(err == GS_ERANGE);
  }
  j = json_loadb((const char *)data, size, JSON_DECODE_ANY, NULL);
  if (j != NULL) {
    uint64_t w = 0;
    memset(&diag, 0, sizeof diag);
    err = gs_api_quantity_whole_diag(j, "q", &w, &diag);
    FUZZ_CHECK_DIAG(err, diag);
    if (json_is_string(j)) {
      uint64_t x = 0;
      enum gs_err e2 = gs_api_quantity_whole_str(json_string_value(j), "q", &x, NULL);
      FUZZ_CHECK(e2 == err && (err != GS_EOK || x == w));
    }
    json_decref(j);
  }
  free(text);
  return 0;
}
