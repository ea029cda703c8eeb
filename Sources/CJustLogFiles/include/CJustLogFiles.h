// File-system calls Swift can't make itself: `ioctl` is variadic (Swift imports no variadic C function), and Glibc's
// Swift module has no `statfs`.
#ifndef CJUSTLOG_FILES_H
#define CJUSTLOG_FILES_H

// Turns copy-on-write off for `fd`, an empty file on btrfs (`chattr +C`): its blocks reserved with
// `posix_fallocate` are then written in place, so a write into them needs no free space. Returns 0 once the flag
// reads back set, or the `errno` of the failure (`EOPNOTSUPP` where the file system dropped it, `ENOTSUP` where the
// system has no such flag).
int cjustlog_disable_copy_on_write(int fd);

// Whether `fd`, a segment file, is on a copy-on-write file system, where a write into a shared mapping of a full disk
// raises SIGBUS or waits in the kernel: 1 if so, 0 if not. `fstatfs`'s `f_type` says so for btrfs, ZFS and bcachefs
// (1) and for ext4, XFS and tmpfs (0). Elsewhere — a stacked file system such as overlayfs, whose upper layer may be
// btrfs (Podman's default on Fedora), FUSE, anything else — the file's flags tell: for a new, still empty file
// (`empty` non-zero), 1 if copy-on-write could be turned off for it (which only btrfs allows, under whatever stacks
// on it; the flag is then left set) or if it compresses (btrfs refuses the flag then), else 0; for an existing one, 1
// if copy-on-write is off (a segment made so) or it compresses, else -1: not told (ask a new file in the same
// folder).
int cjustlog_segment_copies_on_write(int fd, int empty);

#endif
