// File-system calls Swift can't make itself: `ioctl` is variadic (Swift imports no variadic C function), and Glibc's
// Swift module has no `statfs`.
#ifndef CJUSTLOG_FILES_H
#define CJUSTLOG_FILES_H

// Turns copy-on-write off for `fd`, an empty file on btrfs (`chattr +C`): its blocks reserved with
// `posix_fallocate` are then written in place, so a write into them needs no free space. Returns 0, or the
// `errno` of the failure (`ENOTSUP` where the system has no such flag).
int cjustlog_disable_copy_on_write(int fd);

// Whether `fd` is on a copy-on-write file system — btrfs, ZFS or bcachefs (`fstatfs`'s `f_type`) — where a write
// into a shared mapping of a full disk raises SIGBUS or waits in the kernel: 1 if so, 0 if not or unknown.
int cjustlog_file_system_copies_on_write(int fd);

#endif
