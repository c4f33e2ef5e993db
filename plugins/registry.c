#include "plugins.h"

#include "gang/gang.h"

static const struct gs_plugin_ops *const default_plugins[] = {
    &gs_plugin_gang, /* first: it steers gang members before gpumem looks */
    &gs_plugin_gpumem,
};

const struct gs_plugin_ops *const *gs_plugins_default(size_t *ret_n) {
  *ret_n = sizeof default_plugins / sizeof default_plugins[0];
  return default_plugins;
}
