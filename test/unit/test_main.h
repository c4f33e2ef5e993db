/* A unit test binary's main (after <cmocka.h>): runs the cmocka tests
 * listed, with the group's setup and teardown (NULL: none). One line for
 * what every test file would otherwise spell out again. */
#ifndef GPUSHARE_TEST_MAIN_H
#define GPUSHARE_TEST_MAIN_H

#define GS_TEST_MAIN(setup, teardown, ...)                                                        \
  int main(void) {                                                                                \
    const struct CMUnitTest tests_[] = {__VA_ARGS__};                                             \
    return cmocka_run_group_tests(tests_, setup, teardown);                                       \
  }

#endif
