/* The Lease record and the pure acquire/renew decision of client-go's
 * LeaderElector (docs/kube-protocol.md §C.10). Expiry is judged by the local time a
 * change of the record was *observed*, never by renewTime, so clock skew
 * between candidates does not matter. */
#include "kube_int.h"

#include <stdio.h>
#include <string.h>

static void copy_str(char *dst, size_t cap, const json_t *v) {
  if (json_is_string(v))
    snprintf(dst, cap, "%s", json_string_value(v));
  else
    dst[0] = '\0';
}

void gs__lease_spec_from_json(const json_t *lease, struct gs__lease_spec *ret) {
  const json_t *spec = json_object_get(lease, "spec"), *v;
  memset(ret, 0, sizeof *ret);
  if (!json_is_object(spec))
    return;
  copy_str(ret->holder, sizeof ret->holder, json_object_get(spec, "holderIdentity"));
  v = json_object_get(spec, "leaseDurationSeconds");
  ret->duration_s = json_is_integer(v) ? (long)json_integer_value(v) : 0;
  copy_str(ret->acquire, sizeof ret->acquire, json_object_get(spec, "acquireTime"));
  copy_str(ret->renew, sizeof ret->renew, json_object_get(spec, "renewTime"));
  v = json_object_get(spec, "leaseTransitions");
  ret->transitions = json_is_integer(v) ? (long)json_integer_value(v) : 0;
}

static json_t *time_or_null(const char *t) {
  return t[0] ? json_string(t) : json_null();
}

json_t *gs__lease_spec_to_json(const struct gs__lease_spec *spec) {
  return json_pack("{s:s, s:I, s:o, s:o, s:I}", "holderIdentity", spec->holder,
                   "leaseDurationSeconds", (json_int_t)spec->duration_s, "acquireTime",
                   time_or_null(spec->acquire), "renewTime", time_or_null(spec->renew),
                   "leaseTransitions", (json_int_t)spec->transitions);
}

bool gs__lease_spec_equal(const struct gs__lease_spec *a, const struct gs__lease_spec *b) {
  return strcmp(a->holder, b->holder) == 0 && a->duration_s == b->duration_s &&
         strcmp(a->acquire, b->acquire) == 0 && strcmp(a->renew, b->renew) == 0 &&
         a->transitions == b->transitions;
}

enum gs__lease_action gs__lease_decide(const struct gs__lease_spec *cur, const char *me,
                                       int64_t observed_ms, int64_t now_ms,
                                       const char *now_micro, long my_duration_s,
                                       struct gs__lease_spec *ret_desired) {
  bool mine = strcmp(cur->holder, me) == 0;
  struct gs__lease_spec d;
  if (cur->holder[0] != '\0' && !mine && observed_ms + (int64_t)cur->duration_s * 1000 > now_ms)
    return GS__LEASE_WAIT;
  memset(&d, 0, sizeof d);
  snprintf(d.holder, sizeof d.holder, "%s", me);
  d.duration_s = my_duration_s;
  snprintf(d.renew, sizeof d.renew, "%s", now_micro);
  if (mine) {
    snprintf(d.acquire, sizeof d.acquire, "%s", cur->acquire[0] ? cur->acquire : now_micro);
    d.transitions = cur->transitions;
  } else {
    snprintf(d.acquire, sizeof d.acquire, "%s", now_micro);
    d.transitions = cur->transitions + 1;
  }
  *ret_desired = d;
  return mine ? GS__LEASE_RENEW : GS__LEASE_TAKEOVER;
}
