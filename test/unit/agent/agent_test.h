/* Helpers shared by the agent's Allocate tests (test_agent.c,
 * test_agent_init.c); header-only, included after cmocka.h and agent.h. */
#ifndef GPUSHARE_TEST_AGENT_TEST_H
#define GPUSHARE_TEST_AGENT_TEST_H

#include <gpushare/annot.h>

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NODE "gpu-a"
#define NOW INT64_C(1800000000000000000)
#define UUID0 "GPU-00000000-0000-0000-0000-000000000000"
#define UUID1 "GPU-11111111-1111-1111-1111-111111111111"

/* A node agent's config: unit MiB units, mode (MPS: pipes in
 * /var/run/nvidia/mps). */
static inline struct gs_agent_config cfg_of(uint32_t unit, enum gs_mode mode) {
  struct gs_agent_config c;
  memset(&c, 0, sizeof c);
  c.unit_mib = unit;
  c.mode = mode;
  if (mode == GS_MODE_MPS)
    snprintf(c.mps_pipe_dir, sizeof c.mps_pipe_dir, "/var/run/nvidia/mps");
  return c;
}

/* Allocate on NODE at NOW over inv, a borrowed pod list and a borrowed
 * kubelet pod-resources list (NULL: none); the answer as JSON, or NULL
 * with *ret_err and d (printed when ret_err is NULL). */
static inline json_t *agent_allocate_seen(const struct gs_agent_config *cfg,
                                          const struct gs_agent_inventory *inv,
                                          const char *resource, uint64_t n, const json_t *pods,
                                          const json_t *kubelet, enum gs_err *ret_err,
                                          struct gs_diag *d) {
  char *text = json_dumps(pods, JSON_COMPACT), *out = NULL;
  char *seen = kubelet != NULL ? json_dumps(kubelet, JSON_COMPACT) : NULL;
  struct gs_agent_call call = {NODE, resource, n, text, strlen(text),
                               seen, seen != NULL ? strlen(seen) : 0, NOW};
  json_t *answer = NULL;
  enum gs_err err;
  memset(d, 0, sizeof *d);
  err = gs_agent_allocate(cfg, inv, &call, &out, d);
  free(seen);
  free(text);
  if (ret_err != NULL)
    *ret_err = err;
  else if (err != GS_EOK)
    print_message("allocate: %s: %s\n", gs_strerror(err), d->text);
  if (err == GS_EOK) {
    answer = json_loads(out, 0, NULL);
    free(out);
  }
  return answer;
}

static inline json_t *agent_allocate(const struct gs_agent_config *cfg,
                                     const struct gs_agent_inventory *inv, const char *resource,
                                     uint64_t n, const json_t *pods, enum gs_err *ret_err,
                                     struct gs_diag *d) {
  return agent_allocate_seen(cfg, inv, resource, n, pods, NULL, ret_err, d);
}

static inline const char *env(const json_t *answer, const char *key) {
  return json_string_value(json_object_get(json_object_get(answer, "envs"), key));
}

/* The answer's envs as kv says: key, value, key, value, ..., NULL (a NULL
 * value: the env is absent). */
static inline void agent_assert_envs(const json_t *answer, const char *const *kv) {
  for (size_t i = 0; kv[i] != NULL; i += 2) {
    const char *got = env(answer, kv[i]);
    if (kv[i + 1] == NULL ? got != NULL
                          : got == NULL || strcmp(got, kv[i + 1]) != 0)
      fail_msg("env %s: \"%s\", want \"%s\"", kv[i], got ? got : "(absent)",
               kv[i + 1] ? kv[i + 1] : "(absent)");
  }
}
#define assert_envs(answer, ...) agent_assert_envs(answer, (const char *const[]){__VA_ARGS__, NULL})

static inline const char *patched(const json_t *answer, const char *key) {
  return json_string_value(json_object_get(json_object_get(answer, "annotations"), key));
}

#endif
