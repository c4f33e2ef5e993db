/* gpushare — the built-in plugins, in the order the framework runs them. */
#ifndef GPUSHARE_PLUGINS_H
#define GPUSHARE_PLUGINS_H

#include <gpushare/plugin.h>

/* GPU memory sharing and whole-GPU placement on one node (docs/contract.md §3, §4). */
extern const struct gs_plugin_ops gs_plugin_gpumem;

/* The default plugin list; *ret_n gets its length. Static storage. */
const struct gs_plugin_ops *const *gs_plugins_default(size_t *ret_n);

#endif
