/* Internal caps shared by the ledger and placement. */
#ifndef GPUSHARE_CORE_CAPS_H
#define GPUSHARE_CORE_CAPS_H

#include <stdint.h>

/* Largest amount one allocation part may carry, in MiB (2^40 MiB = 1 EiB).
 * No GPU comes near it; it keeps per-GPU sums clear of uint64 overflow
 * whatever the apiserver's annotations say. Placement refuses larger
 * requests as never fitting, the ledger refuses such parts with GS_ERANGE. */
#define GS__PART_MIB_MAX (UINT64_C(1) << 40)

#endif
