/* Fuzz target "pdb": a PodDisruptionBudget and a Pod in one JSON array
 * [pdb, pod] (issue 34): gs_api_pdb_decode, gs_api_pod_labels_text,
 * gs_selector_matches, and the budget through the service's feed.
 * Invariants: a decoded selector is lines of requirements the core reads
 * ("=k=v,..", "!k=v,..", "+k", "-k"), each ending in a newline; labels are
 * "k=v" lines; a pod's labels always satisfy their own matchLabels; a NULL
 * selector selects nothing. */
#include "fuzz.h"

#include "api.h"
#include "feed.h"

#include <gpushare/preempt.h>

static void check_selector(const char *sel) {
  const char *line = sel;
  while (*line != '\0') {
    const char *end = strchr(line, '\n');
    FUZZ_CHECK(end != NULL && end > line + 1);
    FUZZ_CHECK(strchr("=!+-", line[0]) != NULL);
    line = end + 1;
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static struct gs_api_pdb d;
  static char labels[GS_API_LABELS_MAX], own[GS_API_SELECTOR_MAX];
  struct gs_diag diag = {"", ""};
  json_error_t jerr;
  json_t *doc = json_loadb((const char *)data, size, 0, &jerr);
  const json_t *pdb = json_array_get(doc, 0), *pod = json_array_get(doc, 1);
  struct gs_policy policy;
  struct gs_sched *s;
  bool have_labels;

  if (doc == NULL)
    return 0;
  have_labels = gs_api_pod_labels_text(pod, labels, sizeof labels) == GS_EOK;
  if (have_labels) {
    /* "k=v" lines; as a selector of "=k=v" lines they select the pod */
    size_t at = 0;
    const char *line = labels;
    own[0] = '\0';
    while (*line != '\0') {
      const char *end = strchr(line, '\n');
      FUZZ_CHECK(end != NULL && memchr(line, '=', (size_t)(end - line)) != NULL);
      if (at + (size_t)(end - line) + 3 < sizeof own) {
        own[at++] = '=';
        memcpy(own + at, line, (size_t)(end - line) + 1);
        at += (size_t)(end - line) + 1;
        own[at] = '\0';
      }
      line = end + 1;
    }
    FUZZ_CHECK(gs_selector_matches(own, labels));
    FUZZ_CHECK(gs_selector_matches("", labels));
    FUZZ_CHECK(!gs_selector_matches(NULL, labels));
  }
  if (gs_api_pdb_decode(pdb, &d, &diag) == GS_EOK) {
    FUZZ_CHECK(d.allowed >= 0);
    check_selector(d.selector);
    if (have_labels)
      (void)gs_selector_matches(d.selector_null ? NULL : d.selector, labels);
  } else {
    FUZZ_CHECK(diag.text[0] != '\0');
  }
  gs_policy_init(&policy);
  s = gs_sched_new(&policy);
  if (s != NULL) {
    gs__feed_pdb(s, pdb);
    gs__feed_pdb_delete(s, pdb);
    gs_sched_free(s);
  }
  json_decref(doc);
  return 0;
}
