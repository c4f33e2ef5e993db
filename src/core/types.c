/* Units, modes, placement names and pod-request arithmetic. */
#include <gpushare/types.h>

#include <string.h>

enum gs_err gs_unit_parse(const char *text, uint32_t *ret_mib) {
  static const struct {
    const char *name;
    uint32_t mib;
  } units[] = {
      {"1GiB", GS_UNIT_GIB}, {"1Gi", GS_UNIT_GIB},
      {"128MiB", GS_UNIT_128MIB}, {"128Mi", GS_UNIT_128MIB},
  };
  if (text == NULL)
    return GS_EUNIT;
  for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
    if (strcmp(text, units[i].name) == 0) {
      *ret_mib = units[i].mib;
      return GS_EOK;
    }
  }
  return GS_EUNIT;
}

const char *gs_unit_name(uint32_t unit_mib) {
  switch (unit_mib) {
  case GS_UNIT_GIB:
    return "1GiB";
  case GS_UNIT_128MIB:
    return "128MiB";
  default:
    return "?";
  }
}

static const char *const mode_names[] = {
    [GS_MODE_NONE] = "default", [GS_MODE_SHARE] = "share", [GS_MODE_CGPU] = "cgpu",
    [GS_MODE_MPS] = "mps",      [GS_MODE_TOPOLOGY] = "topology",
};

const char *gs_mode_name(enum gs_mode mode) {
  if ((unsigned)mode >= sizeof mode_names / sizeof mode_names[0])
    return "default";
  return mode_names[mode];
}

enum gs_mode gs_mode_parse(const char *label) {
  if (label == NULL)
    return GS_MODE_NONE;
  for (unsigned i = GS_MODE_SHARE; i < sizeof mode_names / sizeof mode_names[0]; i++)
    if (strcmp(label, mode_names[i]) == 0)
      return (enum gs_mode)i;
  return GS_MODE_NONE;
}

bool gs_mode_is_memory(enum gs_mode mode) {
  return mode == GS_MODE_SHARE || mode == GS_MODE_CGPU || mode == GS_MODE_MPS;
}

const char *gs_placement_name(enum gs_placement p) {
  return p == GS_PLACE_SPREAD ? "spread" : p == GS_PLACE_FRAG ? "frag" : "binpack";
}

enum gs_placement gs_placement_parse(const char *label) {
  if (label != NULL && strcmp(label, "spread") == 0)
    return GS_PLACE_SPREAD;
  return GS_PLACE_BINPACK;
}

/* Saturating add: requests are bounded by the decoder, but never wrap. */
static uint64_t sat_add(uint64_t a, uint64_t b) {
  return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

uint64_t gs_pod_request_mem_sum(const struct gs_pod_request *req) {
  uint64_t sum = 0;
  for (uint32_t i = 0; i < req->ncontainers && i < GS_MAX_CONTAINERS; i++)
    sum = sat_add(sum, req->mem_units[i]);
  return sum;
}

uint64_t gs_pod_request_mem_effective(const struct gs_pod_request *req) {
  uint64_t sum = gs_pod_request_mem_sum(req);
  return req->init_mem_units > sum ? req->init_mem_units : sum;
}

uint64_t gs_pod_request_whole_effective(const struct gs_pod_request *req) {
  uint64_t sum = 0;
  for (uint32_t i = 0; i < req->ncontainers && i < GS_MAX_CONTAINERS; i++)
    sum = sat_add(sum, req->whole_gpus[i]);
  return req->init_whole_gpus > sum ? req->init_whole_gpus : sum;
}

bool gs_pod_request_is_memory(const struct gs_pod_request *req) {
  return gs_pod_request_mem_effective(req) > 0;
}

bool gs_pod_request_is_whole(const struct gs_pod_request *req) {
  return gs_pod_request_whole_effective(req) > 0;
}

bool gs_pod_request_is_gang_member(const struct gs_pod_request *req) {
  return req->gang_job[0] != '\0' && (gs_pod_request_is_whole(req) || gs_pod_request_is_memory(req));
}
