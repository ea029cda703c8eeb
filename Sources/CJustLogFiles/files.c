#include "CJustLogFiles.h"

#include <errno.h>

#if defined(__linux__)
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/vfs.h>

int cjustlog_disable_copy_on_write(int fd) {
    int flags = 0;
    if (ioctl(fd, FS_IOC_GETFLAGS, &flags) != 0) return errno;
    if (flags & FS_NOCOW_FL) return 0;
    flags |= FS_NOCOW_FL;
    return ioctl(fd, FS_IOC_SETFLAGS, &flags) == 0 ? 0 : errno;
}
int cjustlog_file_system_copies_on_write(int fd) {
    struct statfs info;
    if (fstatfs(fd, &info) != 0) return 0;
    switch ((unsigned int)info.f_type) {
    case 0x9123683Eu:  // btrfs
    case 0x2FC12FC1u:  // ZFS
    case 0xCA451A4Eu:  // bcachefs
        return 1;
    default:
        return 0;
    }
}
#else
int cjustlog_disable_copy_on_write(int fd) {
    (void)fd;
    return ENOTSUP;
}

int cjustlog_file_system_copies_on_write(int fd) {
    (void)fd;
    return 0;
}
#endif
