/* gpushare — the built-in plugins, in the order the framework runs them. */
#ifndef GPUSHARE_PLUGINS_H
#define GPUSHARE_PLUGINS_H

#include <gpushare/ledger.h>
#include <gpushare/place.h>
#include <gpushare/plugin.h>

/* The allocation a plugin's Reserve charges for the cycle's pod on node:
 * of kind, ASSUMED now, its parts from choice written into parts (cap of
 * them; nparts 0 when more would be needed: gs_place_parts). */
static inline struct gs_alloc gs__plugin_assumed(const struct gs_cycle *c, const char *node,
                                                 enum gs_alloc_kind kind,
                                                 const struct gs_choice *choice,
                                                 struct gs_alloc_part *parts, uint32_t cap) {
  struct gs_alloc a = {
      .ns = c->pod->ns,
      .name = c->pod->name,
      .uid = c->pod->uid,
      .node = node,
      .kind = kind,
      .state = GS_ALLOC_ASSUMED,
      .unit_mib = c->policy->unit_mib,
      .assume_time_ns = c->now_ns,
      .priority = c->pod->priority,
  };
  a.nparts = gs_place_parts(c->pod, choice, parts, cap);
  a.parts = parts;
  return a;
}

/* GPU memory sharing and whole-GPU placement on one node (docs/contract.md §3, §4). */
extern const struct gs_plugin_ops gs_plugin_gpumem;

/* The default plugin list; *ret_n gets its length. Static storage. */
const struct gs_plugin_ops *const *gs_plugins_default(size_t *ret_n);

#endif
