/* A unit test binary's main (after <cmocka.h>): runs the cmocka tests
 * listed, with the group's setup and teardown (NULL: none); _NAMED gives
 * the group a name in cmocka's output. One line for what every test file
 * would otherwise spell out again. */
#ifndef GPUSHARE_TEST_MAIN_H
#define GPUSHARE_TEST_MAIN_H

#define GS_TEST_MAIN(setup, teardown, ...)                                                        \
  int main(void) {                                                                                \
    const struct CMUnitTest tests[] = {__VA_ARGS__};                                              \
    return cmocka_run_group_tests(tests, setup, teardown);                                        \
  }
#define GS_TEST_MAIN_NAMED(name, setup, teardown, ...)                                            \
  int main(void) {                                                                                \
    const struct CMUnitTest tests[] = {__VA_ARGS__};                                              \
    return cmocka_run_group_tests_name(name, tests, setup, teardown);                             \
  }

/* A test with the file's own fixture: static setup() and teardown() run
 * around it. */
#define GS_TEST_FX(test) cmocka_unit_test_setup_teardown(test, setup, teardown)

#endif
