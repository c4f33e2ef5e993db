/* gpushare — the allocation hook: malloc and friends behind one seam so a
 * test can make the Nth allocation fail (curl's "torture" tests).
 *
 * Compiled in always. Unarmed, each wrapper costs one relaxed atomic load
 * and a branch before calling libc. Memory from these wrappers is plain
 * malloc memory: gs_free() is free(), and a caller told to free() a result
 * may do so. Every layer's product code allocates through these wrappers
 * (plugins included, through <gpushare/alloc.h>), so that every failure
 * path can be driven by a test.
 *
 * The hook is process-wide. Arm it only from a single-threaded test (the
 * counter is atomic, but which thread's allocation is "the Nth" is not
 * deterministic otherwise).
 */
#ifndef GPUSHARE_UTIL_ALLOC_H
#define GPUSHARE_UTIL_ALLOC_H

#include <gpushare/alloc.h> /* the wrappers themselves: public, plugins use them */

#include <stdbool.h>
#include <stddef.h>

/* Allocations through the wrappers that returned NULL on the calling
 * thread so far (the hook's or real ones). For libraries whose errors hide
 * running out of memory: jansson, given these wrappers with
 * json_set_alloc_funcs, reports a failed string allocation as a syntax
 * error; a caller compares the count before and after to tell them apart. */
unsigned long gs_alloc_failures(void);

/* Test hook: the nth allocation through the wrappers from now on fails
 * (n = 1: the next one); only that one, later ones succeed again, so the
 * code's recovery is exercised too. n = 0 disarms the hook. Resets the
 * counters below. */
void gs_alloc_fail_after(unsigned long n);
/* True once the armed failure has happened (until the next arming). */
bool gs_alloc_fail_hit(void);
/* Allocations seen since the hook was last armed, up to and including the
 * failed one (counting stops when it fires). */
unsigned long gs_alloc_count(void);

#endif
