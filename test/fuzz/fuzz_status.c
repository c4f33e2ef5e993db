/* Fuzz target "status": an apiserver error reply → gs__kube_status_decode
 * (a Status object, or any other body). Bytes 0..1 are the HTTP code. The
 * result is always usable: bounded, NUL-terminated, never empty. */
#include "fuzz.h"

#include "kube_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  struct gs__kube_status st;
  long code;

  fuzz_init();
  if (size < 2)
    return 0;
  code = (long)(data[0] << 8 | data[1]) % 1000;
  memset(&st, 0xA5, sizeof st);
  gs__kube_status_decode((const char *)data + 2, size - 2, code, &st);
  FUZZ_CHECK(memchr(st.reason, '\0', sizeof st.reason) != NULL);
  FUZZ_CHECK(memchr(st.message, '\0', sizeof st.message) != NULL);
  FUZZ_CHECK(st.message[0] != '\0');
  (void)gs__kube_status_is_expired(&st);
  (void)gs__kube_http_is_retryable(st.code);
  return 0;
}
