/* The framework's tests (header-only): a scheduler over the built-in
 * plugins (gs_plugins_default), as gpushare-extender runs them. */
#ifndef GS_FW_TEST_H
#define GS_FW_TEST_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "framework.h"
#include "plugins.h"

/* New, on policy (borrowed); never NULL (a refusal fails the test). */
static inline struct gs_sched *fw_test_new(const struct gs_policy *policy) {
  size_t n;
  const struct gs_plugin_ops *const *plugins = gs_plugins_default(&n);
  struct gs_sched *fw = gs__sched_new_with(policy, plugins, n, NULL);
  assert_non_null(fw);
  return fw;
}

#endif
