/* SPDX-License-Identifier: BSD-3-Clause */
/* client_version.c — rc_version() (ringcast/version.h), in both libraries.
 * RCI_VERSION comes from the VERSION file (Makefile), which the build also
 * checks against the RINGCAST_VERSION_* macros. */
#include "ringcast/version.h"

const char *rc_version(void) { return RCI_VERSION; }
