/* SPDX-License-Identifier: BSD-3-Clause */
/* ringcast/version.h — the version of the headers you compile against.
 * These numbers are the VERSION file of the source tree: the build fails when
 * they differ (Makefile, check-version). rc_version() gives the version of
 * the library actually loaded at run time. */
#ifndef RINGCAST_VERSION_H
#define RINGCAST_VERSION_H
#include "ringcast/common.h"

#define RINGCAST_VERSION_MAJOR 0
#define RINGCAST_VERSION_MINOR 1
#define RINGCAST_VERSION_PATCH 0
/* One number for comparisons: RINGCAST_VERSION >= RINGCAST_VERSION_NUM(0, 2, 0). */
#define RINGCAST_VERSION_NUM(major, minor, patch) ((major) * 10000 + (minor) * 100 + (patch))
#define RINGCAST_VERSION \
    RINGCAST_VERSION_NUM(RINGCAST_VERSION_MAJOR, RINGCAST_VERSION_MINOR, RINGCAST_VERSION_PATCH)

#ifdef __cplusplus
extern "C" {
#endif

/* "MAJOR.MINOR.PATCH" of the loaded library (a static string). */
RC_API const char *rc_version(void);

#ifdef __cplusplus
}
#endif
#endif
