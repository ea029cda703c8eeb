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
    if (ioctl(fd, FS_IOC_SETFLAGS, &flags) != 0) return errno;
    // Read back: f2fs and nilfs2 drop a flag they can't set and succeed (review, helper-47).
    if (ioctl(fd, FS_IOC_GETFLAGS, &flags) != 0) return errno;
    return (flags & FS_NOCOW_FL) ? 0 : EOPNOTSUPP;
}

int cjustlog_segment_copies_on_write(int fd, int empty) {
    struct statfs info;
    if (fstatfs(fd, &info) == 0) {
        switch ((unsigned int)info.f_type) {
        case 0x9123683Eu:  // btrfs
        case 0x2FC12FC1u:  // ZFS
        case 0xCA451A4Eu:  // bcachefs
            return 1;
        case 0xEF53u:      // ext2, ext3, ext4
        case 0x58465342u:  // XFS
        case 0x01021994u:  // tmpfs
            return 0;
        default:
            break;
        }
    }
    if (empty && cjustlog_disable_copy_on_write(fd) == 0) return 1;
    // A file that compresses (`chattr +c`, or a folder that does, whose new files inherit it): btrfs refuses to turn
    // copy-on-write off for it, and writes through its mapping may still need new blocks (review, helper-51) —
    // written through the file, as an error on a full disk, never a signal. (Other file systems that compress,
    // f2fs among them, are slower for it, never unsafe.)
    int flags = 0;
    if (ioctl(fd, FS_IOC_GETFLAGS, &flags) == 0 && (flags & (FS_NOCOW_FL | FS_COMPR_FL)) != 0) return 1;
    return empty ? 0 : -1;
}
#else
int cjustlog_disable_copy_on_write(int fd) {
    (void)fd;
    return ENOTSUP;
}

int cjustlog_segment_copies_on_write(int fd, int empty) {
    (void)fd;
    (void)empty;
    return 0;
}
#endif
