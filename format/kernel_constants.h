/* Kernel ABI values that fsrr's eBPF programs (bpf/) and its user space (recorder, replayer)
 * both use, in one place. The eBPF side sees only vmlinux.h, which holds types and enums but
 * none of the kernel's macros; some of these are internal to the kernel (FMODE_CREATED,
 * TS_COMPAT) and no user-space header has them. Plain C, so both compilers read it. */
#ifndef FSRR_KERNEL_CONSTANTS_H
#define FSRR_KERNEL_CONSTANTS_H

/* ioctl requests (linux/fs.h) */
#define FSRR_FICLONE 0x40049409u
#define FSRR_FICLONERANGE 0x4020940du

/* struct file's f_mode (linux/fs.h, kernel-internal): this open created the file */
#define FSRR_FMODE_CREATED (1u << 20)

/* a 32-bit syscall: the thread's status bit, or the x32 bit in the syscall number */
#define FSRR_TS_COMPAT 0x0002u
#define FSRR_X32_SYSCALL_BIT 0x40000000u

/* POSIX ACL xattr layout (linux/posix_acl_xattr.h): a 4-byte version, then 8-byte entries
 * {u16 tag, u16 perm, u32 id}, sorted by tag then id */
#define FSRR_ACL_VERSION 2
#define FSRR_ACL_USER_OBJ 0x01
#define FSRR_ACL_USER 0x02
#define FSRR_ACL_GROUP_OBJ 0x04
#define FSRR_ACL_GROUP 0x08
#define FSRR_ACL_MASK 0x10
#define FSRR_ACL_OTHER 0x20

#endif
