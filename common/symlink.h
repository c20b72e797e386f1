/* SPDX-License-Identifier: BSD-3-Clause */
/* symlink.h — the last path element of a symbolic link's target.
 * sysfs says which driver and which IOMMU group a PCI device has by
 * symlinks (.../driver -> ../../bus/pci/drivers/vfio-pci); the card code
 * (readout/vfio.c) and ringcast-doctor both read them this way. */
#ifndef RCI_COMMON_SYMLINK_H
#define RCI_COMMON_SYMLINK_H

#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <string.h>
#include <unistd.h>

/* Fills out with the last element of the target of the symlink at path.
 * Returns 0, -errno of readlink, or -ENAMETOOLONG when it does not fit
 * (never a truncated name: a truncated driver name could match another). */
static inline int rci_link_basename(const char *path, char *out, size_t outlen)
{
    char target[PATH_MAX];
    ssize_t n = readlink(path, target, sizeof target - 1);
    if (n < 0)
        return -errno;
    target[n] = '\0';
    const char *slash = strrchr(target, '/');
    const char *base = slash ? slash + 1 : target;
    size_t len = strlen(base);
    if (len >= outlen)
        return -ENAMETOOLONG;
    memcpy(out, base, len + 1);
    return 0;
}

#endif
