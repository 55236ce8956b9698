/*
 * pagesim's capture plugin for QEMU user-mode emulation (`pagesim capture` builds and loads it).
 *
 * Records, per guest thread, the pages its loads and stores touch, the pages of text its
 * instructions are fetched from (as loads: a translation block's first page, and its second
 * if it runs into it), and the system calls it makes, reduced in place by Smith's stack
 * deletion: an access to one of the K pages the thread touched most recently is dropped (for
 * any LRU memory of at least K pages it is a hit), except the first store to a page whose
 * kept accesses were all loads (so that which pages a thread dirties stays exact). Data and
 * text have a stack of K pages each (text would otherwise push a loop's data out of the K,
 * and a program's trace grows twentyfold: sort's 6 M records against 118 M), and both are
 * forgotten when a system call returns: the kernel may have reclaimed any page meanwhile (a
 * read's readahead charge reclaims in the caller), and the program touching it again must
 * be in the trace for the replay to fault it back. `pagesim capture` turns the raw files
 * into one pagesim trace (crates/pagesim/src/tracefile/pagesim.rs).
 *
 * The plugin API is declared here rather than taken from QEMU's header, so that the plugin
 * builds without QEMU's development files; only calls that every API version from 1 on has
 * are used, and the version it declares is given at build time (-DPAGESIM_PLUGIN_API=N).
 *
 * Raw output, one file per thread and process image in the directory `out=`:
 *   a header of 8 words: magic, format version, pid, tid, parent pid, K, the monotonic
 *   clock at the start (ns), the stream's number in its process;
 *   then records of 64-bit words, told apart by their low two bits:
 *     access:  (vpn << 2) | (store << 1) | 0, then the instructions executed since the
 *              thread's previous record;
 *     syscall: (nr << 2) | 1 with the record's length in words in bits 32-47 (so nr is
 *              below 2^30), then instructions since the previous record, the monotonic
 *              clock (ns), the six arguments, the return value, and for a call that names
 *              a file (open, openat, creat, openat2, mmap of an fd) the file's size, its
 *              inode, and its path as bytes padded to whole words (length first);
 *              an unlink(2) or unlinkat(2) of a regular file with one link names it
 *              too (found at the call's entry); an open with O_TRUNC (or creat) of a
 *              regular file that existed before the call is followed by the
 *              ftruncate(fd, 0) it amounts to, a record of no instructions of its own;
 *              A system call of number MARK_NR is a time mark (see MARK_INSNS), not a call.
 *     mapping: (3) with the length in bits 32-47, then start, end, offset, flags (1 read,
 *              2 write, 4 exec, 8 shared), path length and path: one of the mappings the
 *              loader made before the first instruction (the program, its interpreter,
 *              the stack), from /proc/self/maps.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#ifndef PAGESIM_PLUGIN_API
#define PAGESIM_PLUGIN_API 1
#endif

/* ---- The QEMU plugin API, as far as this plugin uses it. ---- */
#define EXPORT __attribute__((visibility("default")))
typedef uint64_t qemu_plugin_id_t;
typedef uint32_t qemu_plugin_meminfo_t;
struct qemu_plugin_tb;
struct qemu_plugin_insn;
typedef struct {
    const char *target_name;
    struct {
        int min;
        int cur;
    } version;
    bool system_emulation;
    union {
        struct {
            int smp_vcpus;
            int max_vcpus;
        } system;
    };
} qemu_info_t;
enum qemu_plugin_cb_flags { QEMU_PLUGIN_CB_NO_REGS, QEMU_PLUGIN_CB_R_REGS, QEMU_PLUGIN_CB_RW_REGS };
enum qemu_plugin_mem_rw { QEMU_PLUGIN_MEM_R = 1, QEMU_PLUGIN_MEM_W, QEMU_PLUGIN_MEM_RW };
typedef void (*qemu_plugin_udata_cb_t)(qemu_plugin_id_t id, void *userdata);
typedef void (*qemu_plugin_vcpu_udata_cb_t)(unsigned int vcpu_index, void *userdata);
typedef void (*qemu_plugin_vcpu_tb_trans_cb_t)(qemu_plugin_id_t id, struct qemu_plugin_tb *tb);
typedef void (*qemu_plugin_vcpu_mem_cb_t)(unsigned int vcpu_index, qemu_plugin_meminfo_t info, uint64_t vaddr,
                                          void *userdata);
typedef void (*qemu_plugin_vcpu_syscall_cb_t)(qemu_plugin_id_t id, unsigned int vcpu_index, int64_t num, uint64_t a1,
                                              uint64_t a2, uint64_t a3, uint64_t a4, uint64_t a5, uint64_t a6,
                                              uint64_t a7, uint64_t a8);
typedef void (*qemu_plugin_vcpu_syscall_ret_cb_t)(qemu_plugin_id_t id, unsigned int vcpu_idx, int64_t num,
                                                  int64_t ret);
void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id, qemu_plugin_vcpu_tb_trans_cb_t cb);
void qemu_plugin_register_vcpu_tb_exec_cb(struct qemu_plugin_tb *tb, qemu_plugin_vcpu_udata_cb_t cb,
                                          enum qemu_plugin_cb_flags flags, void *userdata);
void qemu_plugin_register_vcpu_mem_cb(struct qemu_plugin_insn *insn, qemu_plugin_vcpu_mem_cb_t cb,
                                      enum qemu_plugin_cb_flags flags, enum qemu_plugin_mem_rw rw, void *userdata);
void qemu_plugin_register_vcpu_syscall_cb(qemu_plugin_id_t id, qemu_plugin_vcpu_syscall_cb_t cb);
void qemu_plugin_register_vcpu_syscall_ret_cb(qemu_plugin_id_t id, qemu_plugin_vcpu_syscall_ret_cb_t cb);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id, qemu_plugin_udata_cb_t cb, void *userdata);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
uint64_t qemu_plugin_tb_vaddr(const struct qemu_plugin_tb *tb);
uint64_t qemu_plugin_insn_vaddr(const struct qemu_plugin_insn *insn);
size_t qemu_plugin_insn_size(const struct qemu_plugin_insn *insn);
struct qemu_plugin_insn *qemu_plugin_tb_get_insn(const struct qemu_plugin_tb *tb, size_t idx);
unsigned int qemu_plugin_mem_size_shift(qemu_plugin_meminfo_t info);
bool qemu_plugin_mem_is_store(qemu_plugin_meminfo_t info);

EXPORT int qemu_plugin_version = PAGESIM_PLUGIN_API;

/* ---- State. ---- */
#define MAGIC 0x7061676573696d31ull /* "pagesim1" */
#define RAW_VERSION 3
/* A time mark: a record in the form of a system call of this number, written every
 * MARK_INSNS instructions a thread runs without a system call, so that `pagesim capture`
 * orders the threads' records by the time they ran (a thread that computes for long
 * stretches without a call would otherwise be ordered by its instruction count alone). */
#define MARK_NR 0x3ffffffe
#define MARK_INSNS (1u << 20)
#define MAX_VCPUS 4096
#define MAX_K 1024
#define BUF_WORDS (1 << 16)
/* touch()'s hint table: this many entries per recent page at least, a power of two. */
#define HINTS_PER_PAGE 64
#define NO_PAGE UINT64_MAX

enum { TAG_ACCESS = 0, TAG_SYSCALL = 1, TAG_MAPPING = 3 };

/* x86_64 system call numbers this plugin reacts to. */
enum {
    NR_OPEN = 2,
    NR_MMAP = 9,
    NR_CLONE = 56,
    NR_FORK = 57,
    NR_VFORK = 58,
    NR_EXECVE = 59,
    NR_EXIT = 60,
    NR_FTRUNCATE = 77,
    NR_CREAT = 85,
    NR_UNLINK = 87,
    NR_EXIT_GROUP = 231,
    NR_OPENAT = 257,
    NR_UNLINKAT = 263,
    NR_EXECVEAT = 322,
    NR_CLONE3 = 435,
    NR_OPENAT2 = 437,
};
#define CLONE_VM 0x100
#define CLONE_THREAD 0x10000
#define MAP_ANONYMOUS 0x20
#define GUEST_O_TRUNC 01000
#define GUEST_O_TMPFILE 020200000
#define GUEST_AT_FDCWD (-100)
#define GUEST_AT_REMOVEDIR 0x200

/* A thread's K most recently touched pages (stack deletion, touch()): in K slots, each page,
 * the count of accesses at its last touch and whether a kept access stored to it; and the
 * hint table, the slot that page p was last seen in at hint_of(p) (a hint only: the slot's
 * page is compared). */
struct recent {
    uint64_t clock;
    uint64_t stack[MAX_K];
    uint64_t when[MAX_K];
    uint8_t stored[MAX_K];
    uint16_t *hint; /* hint_mask + 1 entries */
};

struct stream {
    int fd; /* -1: not open yet (opened by the thread's first record) */
    uint32_t n;
    uint64_t *buf;
    uint64_t insns;      /* instructions this thread executed */
    uint64_t last_insns; /* at its previous record */
    uint64_t mark_insns; /* at its previous system call or time mark */
    uint64_t recorded;   /* instructions its records carry: the header's last word at close */
    /* The K most recent pages of its loads and stores, and of its instruction fetches
     * (stack deletion, touch()). */
    struct recent data, code;
    int64_t nr;          /* the system call being made */
    uint64_t args[6];
    char path[4096];     /* the file an mmap names, found at its entry */
    uint64_t path_size, path_ino;
    int path_len;
    /* An open with O_TRUNC: the existing regular file its path named at its entry
     * (inode 0: none), so that its return can tell that it truncated that file. */
    uint64_t trunc_ino, trunc_dev;
    /* clone3's flags, read from its struct clone_args at its entry (0: unread). */
    uint64_t clone3_flags;
};

static struct stream *streams[MAX_VCPUS];
static char out_dir[3072];
static uint32_t k = 16;
static uint32_t hint_mask; /* HINTS_PER_PAGE * K entries, rounded up to a power of two, less 1 */
static int parent_pid;
static uint32_t image; /* process images this process has had (exec starts a new one) */
static uint32_t opened; /* streams this image opened */
static bool maps_taken;
/* Paths are read from the guest's memory at the guest's address: QEMU's x86-64 user mode
 * on an x86-64 host runs the guest at guest_base 0. An open whose path, read there, does not
 * name the file it opened turns this off (see opened_as_named()). */
static bool paths_readable = true;
static char *maps_before; /* /proc/self/maps when the plugin was loaded */

static void die(const char *what) {
    fprintf(stderr, "pagesim capture plugin: %s: %s\n", what, strerror(errno));
    _exit(125);
}

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void write_all(int fd, const void *p, size_t len) {
    const char *c = p;
    while (len > 0) {
        ssize_t w = write(fd, c, len);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            die("cannot write the raw trace");
        }
        c += w;
        len -= (size_t)w;
    }
}

static void flush(struct stream *s) {
    if (s->n > 0 && s->fd >= 0)
        write_all(s->fd, s->buf, (size_t)s->n * 8);
    s->n = 0;
}

/* The header's last word: the instructions the stream's records carry, written when it
 * closes, so that the conversion need not read every raw file twice (UINT64_MAX, as
 * opened, if the stream never closed: the conversion counts them then). */
#define HEADER_WORDS 9

static void close_stream(struct stream *s) {
    if (s->fd >= 0) {
        flush(s);
        while (pwrite(s->fd, &s->recorded, 8, (HEADER_WORDS - 1) * 8) < 0 && errno == EINTR)
            ;
        close(s->fd);
        s->fd = -1;
    }
}

static void open_stream(struct stream *s) {
    char name[3200];
    int pid = getpid(), tid = (int)syscall(SYS_gettid);
    uint32_t seq = __atomic_fetch_add(&opened, 1, __ATOMIC_RELAXED);
    snprintf(name, sizeof name, "%s/%d.%u.%d.%u.raw", out_dir, pid, image, tid, seq);
    int fd = open(name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0)
        die(name);
    /* Out of the way of the descriptors the program numbers itself (dup2 onto 3, 4...). */
    s->fd = fcntl(fd, F_DUPFD_CLOEXEC, 1000);
    if (s->fd < 0)
        die("cannot move the raw trace's descriptor");
    close(fd);
    uint64_t h[HEADER_WORDS] = {MAGIC, RAW_VERSION, (uint64_t)pid, (uint64_t)tid, (uint64_t)parent_pid, k, now_ns(), seq,
                                UINT64_MAX};
    write_all(s->fd, h, sizeof h);
    s->recorded = 0;
}

static void forget_recent(struct recent *r);

static struct stream *stream_slow(unsigned int vcpu) {
    if (vcpu >= MAX_VCPUS) {
        errno = ERANGE;
        die("more guest threads at once than the plugin has room for");
    }
    struct stream *s = streams[vcpu];
    if (!s) {
        s = calloc(1, sizeof *s);
        if (!s || !(s->buf = malloc(BUF_WORDS * 8)) || !(s->data.hint = calloc(hint_mask + 1, 2)) ||
            !(s->code.hint = calloc(hint_mask + 1, 2)))
            die("out of memory");
        s->fd = -1;
        forget_recent(&s->data);
        forget_recent(&s->code);
        streams[vcpu] = s;
    }
    if (s->fd < 0)
        open_stream(s);
    return s;
}

/* Thread `vcpu`'s stream, opened by its first record. */
static inline struct stream *stream_of(unsigned int vcpu) {
    struct stream *s = vcpu < MAX_VCPUS ? streams[vcpu] : NULL;
    if (__builtin_expect(s != NULL && s->fd >= 0, 1))
        return s;
    return stream_slow(vcpu);
}

/* Thread `vcpu` is gone (QEMU gives its index to the next thread it creates). */
static void drop_stream(unsigned int vcpu) {
    struct stream *s = streams[vcpu];
    streams[vcpu] = NULL;
    free(s->data.hint);
    free(s->code.hint);
    free(s->buf);
    free(s);
}

static inline void put(struct stream *s, uint64_t w) {
    if (s->n == BUF_WORDS)
        flush(s);
    s->buf[s->n++] = w;
}

/* Reserves room for `words` words in one piece. */
static inline void room(struct stream *s, uint32_t words) {
    if (s->n + words > BUF_WORDS)
        flush(s);
}

static void put_bytes(struct stream *s, const char *p, int len) {
    put(s, (uint64_t)len);
    for (int i = 0; i < len; i += 8) {
        uint64_t w = 0;
        memcpy(&w, p + i, len - i < 8 ? (size_t)(len - i) : 8);
        put(s, w);
    }
}

/* ---- The loader's mappings: what /proc/self/maps gained before the first instruction. ---- */
static char *read_maps(void) {
    int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        die("cannot open /proc/self/maps");
    size_t cap = 1 << 16, len = 0;
    char *b = malloc(cap);
    for (;;) {
        if (len + 4096 + 1 > cap && !(b = realloc(b, cap *= 2)))
            die("out of memory");
        ssize_t r = read(fd, b + len, cap - len - 1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            die("cannot read /proc/self/maps");
        if (r == 0)
            break;
        len += (size_t)r;
    }
    close(fd);
    b[len] = 0;
    return b;
}

static bool line_in(const char *line, size_t len, const char *text) {
    for (const char *p = text; *p;) {
        const char *e = strchr(p, '\n');
        size_t l = e ? (size_t)(e - p) : strlen(p);
        if (l == len && memcmp(p, line, len) == 0)
            return true;
        p += l + (e ? 1 : 0);
    }
    return false;
}

static void record_loader_mappings(struct stream *s) {
    char *after = read_maps();
    for (char *p = after; *p;) {
        char *e = strchr(p, '\n');
        size_t l = e ? (size_t)(e - p) : strlen(p);
        if (!line_in(p, l, maps_before)) {
            unsigned long start, end, off;
            char perms[8] = {0};
            int at = 0;
            char save = p[l];
            p[l] = 0;
            if (sscanf(p, "%lx-%lx %7s %lx %*s %*s %n", &start, &end, perms, &off, &at) >= 4) {
                const char *path = at > 0 ? p + at : "";
                int plen = (int)strlen(path);
                uint64_t flags = (perms[0] == 'r') | (perms[1] == 'w') << 1 | (perms[2] == 'x') << 2 |
                                 (perms[3] == 's') << 3;
                uint32_t words = 6 + (uint32_t)(plen + 7) / 8;
                room(s, words);
                put(s, (uint64_t)words << 32 | TAG_MAPPING);
                put(s, start);
                put(s, end);
                put(s, off);
                put(s, flags);
                put_bytes(s, path, plen);
            }
            p[l] = save;
        }
        p += l + (e ? 1 : 0);
    }
    free(after);
    free(maps_before);
    maps_before = NULL;
}

static void put_syscall(struct stream *s, int64_t nr, int64_t ret, bool with_file);

/* A time mark (MARK_NR): the thread's clock now, its arguments and result 0. */
static void put_mark(struct stream *s) {
    uint64_t saved[6];
    memcpy(saved, s->args, sizeof saved);
    memset(s->args, 0, sizeof s->args);
    put_syscall(s, MARK_NR, 0, false);
    memcpy(s->args, saved, sizeof saved);
}

/* ---- Stack deletion. ---- */
/*
 * The thread's K most recently touched pages are kept unordered, each with the count of
 * accesses at its last touch; an access to one of them is left out (unless it is the first
 * store to it), any other replaces the least recently touched. Which pages are the K most
 * recent, and so which accesses are kept, does not depend on the slots they are in.
 *
 * Nearly every access is left out, so the callbacks' cost is the path that leaves it out:
 * touch_fast(), inlined into callbacks that call nothing else on it (no registers to save).
 * It looks at the one slot the page's hint names, and finds 99.5 % of sort's 152 M data
 * accesses there (4 MB of lines) and all but 0.1 % of its 52 M blocks' text pages;
 * touch_slow() sees the rest: a new page (0.3 %), the first store to a page (0.06 %), a
 * page whose hint another overwrote (0.05 %). It searches all K, replaces the least recent
 * and writes the record. (The search touch_fast() replaces, of the K pages' low 32 bits on
 * every access not to the page touched last, 35 % of them, took a third of sort's capture
 * time with the calls to QEMU's meminfo functions. A check of the page touched last before
 * the hint made it no faster: it missed a third of the time.)
 */

/* The page's entry in a hint table. Pages of one region have consecutive numbers and those of
 * different regions often the same low bits (sort's stack and heap pages alternated on one
 * entry of the low 8 bits, and 6 % of its accesses fell to touch_slow()): the higher bits are
 * folded in. */
static inline uint32_t hint_of(uint64_t vpn) {
    return (uint32_t)(vpn ^ vpn >> 10 ^ vpn >> 20) & hint_mask;
}

/* Leaves out an access to one of the K most recent pages (true); false if touch_slow() must
 * see it (a page not found by the two checks, or the first store to a page). */
static inline bool touch_fast(struct recent *r, uint64_t vpn, bool store) {
    uint32_t i = r->hint[hint_of(vpn)];
    if ((r->stack[i] != vpn) | (store & !r->stored[i]))
        return false;
    r->when[i] = ++r->clock;
    return true;
}

static __attribute__((noinline)) void touch_slow(struct stream *s, struct recent *r, uint64_t vpn, bool store) {
    uint32_t i = UINT32_MAX;
    for (uint32_t j = 0; j < k; j++)
        if (r->stack[j] == vpn) {
            i = j;
            break;
        }
    bool keep;
    if (i != UINT32_MAX) {
        keep = store && !r->stored[i];
        r->stored[i] |= store;
    } else {
        keep = true;
        /* The least recently touched (an unused slot has time 0). */
        i = 0;
        for (uint32_t j = 1; j < k; j++)
            if (r->when[j] < r->when[i])
                i = j;
        r->stack[i] = vpn;
        r->stored[i] = store;
    }
    r->hint[hint_of(vpn)] = (uint16_t)i;
    r->when[i] = ++r->clock;
    if (keep) {
        room(s, 2);
        s->buf[s->n++] = vpn << 2 | (uint64_t)store << 1 | TAG_ACCESS;
        s->buf[s->n++] = s->insns - s->last_insns;
        s->recorded += s->insns - s->last_insns;
        s->last_insns = s->insns;
    }
}

static inline void touch(struct stream *s, struct recent *r, uint64_t vpn, bool store) {
    if (!touch_fast(r, vpn, store))
        touch_slow(s, r, vpn, store);
}

/*
 * Forget the thread's K most recent pages: the next access to each is kept. Done when a
 * system call returns, since the kernel may have reclaimed any page meanwhile (a charge of
 * the call's own page-cache or anon allocations reclaims in the caller), so that an access
 * to a page the program was using before the call is no longer a hit in every memory of K
 * pages: the replay must see it to fault the page back, as the program does. The hints may
 * stay: no slot holds a page any more.
 */
static void forget_recent(struct recent *r) {
    for (uint32_t i = 0; i < k; i++) {
        r->stack[i] = NO_PAGE;
        r->when[i] = 0;
        r->stored[i] = 0;
    }
}

/* ---- Callbacks. ---- */
/* A translation block's exec callback data (tb_trans()): its instruction count in the low
 * TB_INSNS_BITS bits (at most TCG's 512), whether its code runs into the next page (the bit
 * above), and the page of its first instruction above that. */
#define TB_INSNS_BITS 15
#define TB_CROSSES (1ull << TB_INSNS_BITS)
#define TB_PAGE_SHIFT (TB_INSNS_BITS + 1)

/* Thread `vcpu`'s stream if it is open, else NULL (stream_of() opens it). */
static inline struct stream *stream_open(unsigned int vcpu) {
    struct stream *s = vcpu < MAX_VCPUS ? streams[vcpu] : NULL;
    return __builtin_expect(s != NULL && s->fd >= 0, 1) ? s : NULL;
}

static __attribute__((noinline)) void insns_slow(unsigned int vcpu, uint64_t u) {
    struct stream *s = stream_of(vcpu);
    if (__builtin_expect(!maps_taken, 0)) {
        maps_taken = true;
        record_loader_mappings(s);
    }
    s->insns += u & (TB_CROSSES - 1);
    touch(s, &s->code, u >> TB_PAGE_SHIFT, false);
    if (u & TB_CROSSES)
        touch(s, &s->code, (u >> TB_PAGE_SHIFT) + 1, false);
    if (__builtin_expect(s->insns - s->mark_insns >= MARK_INSNS, 0))
        put_mark(s);
}

/* A translation block runs: its instructions count, and its code's pages are touched as the
 * fetches of its instructions touch them (a load, for stack deletion and the trace). A block
 * that runs into a second page, the first block, a time mark and a page not found by
 * touch_fast() take insns_slow(). */
static void vcpu_insns(unsigned int vcpu, void *udata) {
    uint64_t u = (uintptr_t)udata;
    struct stream *s = stream_open(vcpu);
    if (__builtin_expect(s != NULL && maps_taken && !(u & TB_CROSSES), 1)) {
        uint64_t insns = s->insns + (u & (TB_CROSSES - 1));
        if (__builtin_expect(insns - s->mark_insns < MARK_INSNS, 1) &&
            touch_fast(&s->code, u >> TB_PAGE_SHIFT, false)) {
            s->insns = insns;
            return;
        }
    }
    insns_slow(vcpu, u);
}

/* Whether an access is a store, and log2 of its size, read from its meminfo without a call
 * into QEMU (a call for each access made sort's capture a fifth slower). QEMU (since 6.1;
 * read in 7.2's source and later ones) packs the meminfo as its MemOpIdx, the MemOp above 4
 * bits of MMU index, the MemOp's low 3 bits the size, and the enum qemu_plugin_mem_rw above
 * bit 16. mem_slow() checks both against the API for every access it sees (a thread's first
 * store to each page, each new page and each access across a page boundary among them), so
 * that a QEMU that packs them otherwise stops the capture at once rather than making a
 * wrong trace. */
static inline bool meminfo_is_store(qemu_plugin_meminfo_t info) {
    return (info >> 16) & QEMU_PLUGIN_MEM_W;
}

static inline unsigned int meminfo_size_shift(qemu_plugin_meminfo_t info) {
    return (info >> 4) & 7;
}

static __attribute__((noinline)) void mem_slow(unsigned int vcpu, qemu_plugin_meminfo_t info, uint64_t vaddr,
                                               bool first_done) {
    struct stream *s = stream_of(vcpu);
    bool store = qemu_plugin_mem_is_store(info);
    unsigned int shift = qemu_plugin_mem_size_shift(info);
    if (store != meminfo_is_store(info) || shift != meminfo_size_shift(info)) {
        fprintf(stderr, "pagesim capture plugin: this QEMU packs a memory access's meminfo (%#x) otherwise "
                        "than QEMU 7.2 (store %d, size 2^%u bytes): the plugin cannot read it\n",
                info, store, shift);
        _exit(125);
    }
    if (!first_done)
        touch(s, &s->data, vaddr >> 12, store);
    uint64_t size = 1ull << shift;
    if (((vaddr + size - 1) >> 12) != (vaddr >> 12))
        touch(s, &s->data, (vaddr + size - 1) >> 12, store);
}

/* A load or store, and the next page too if it runs into it (mem_slow()). QEMU 7.2 calls a
 * memory callback for every access whatever kind it was registered for (a store reached a
 * QEMU_PLUGIN_MEM_R callback too), so one callback tells them apart. */
static void vcpu_mem(unsigned int vcpu, qemu_plugin_meminfo_t info, uint64_t vaddr, void *udata) {
    (void)udata;
    struct stream *s = stream_open(vcpu);
    bool done = s != NULL && touch_fast(&s->data, vaddr >> 12, meminfo_is_store(info));
    if (__builtin_expect(done && (vaddr & 4095) + (1u << meminfo_size_shift(info)) <= 4096, 1))
        return;
    mem_slow(vcpu, info, vaddr, done);
}

static void tb_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb) {
    (void)id;
    size_t n = qemu_plugin_tb_n_insns(tb);
    uint64_t first = qemu_plugin_tb_vaddr(tb) >> 12;
    const struct qemu_plugin_insn *last = qemu_plugin_tb_get_insn(tb, n - 1);
    uint64_t end = (qemu_plugin_insn_vaddr(last) + qemu_plugin_insn_size(last) - 1) >> 12;
    uint64_t u = first << TB_PAGE_SHIFT | (end != first ? TB_CROSSES : 0) | (uint64_t)n;
    qemu_plugin_register_vcpu_tb_exec_cb(tb, vcpu_insns, QEMU_PLUGIN_CB_NO_REGS, (void *)(uintptr_t)u);
    for (size_t i = 0; i < n; i++)
        qemu_plugin_register_vcpu_mem_cb(qemu_plugin_tb_get_insn(tb, i), vcpu_mem, QEMU_PLUGIN_CB_NO_REGS,
                                         QEMU_PLUGIN_MEM_RW, NULL);
}

/* The path, size and inode of open file descriptor `fd`; false if it is not a regular file. */
static bool file_of(int fd, struct stream *s) {
    char link[64];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t l = readlink(link, s->path, sizeof s->path - 1);
    struct stat st;
    if (l <= 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        s->path_len = -1;
        return false;
    }
    s->path[l] = 0;
    s->path_len = (int)l;
    s->path_size = (uint64_t)st.st_size;
    s->path_ino = (uint64_t)st.st_ino;
    return true;
}

/* Reads the NUL-terminated string at guest address `addr` into `buf` (`len` bytes of room),
 * a page at a time through process_vm_readv so that a bad address is an error, not a crash. */
static bool guest_string(uint64_t addr, char *buf, size_t len) {
    if (!paths_readable || addr == 0)
        return false;
    size_t got = 0;
    while (got + 1 < len) {
        size_t chunk = 4096 - (size_t)((addr + got) & 4095);
        if (chunk > len - 1 - got)
            chunk = len - 1 - got;
        struct iovec local = {buf + got, chunk}, remote = {(void *)(uintptr_t)(addr + got), chunk};
        ssize_t r = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
        if (r <= 0)
            return false;
        char *nul = memchr(buf + got, 0, (size_t)r);
        if (nul)
            return true;
        got += (size_t)r;
    }
    return false;
}

/* The 8 bytes at guest address `addr` (guest_base is 0: the guest's addresses are ours). */
static bool guest_u64(uint64_t addr, uint64_t *v) {
    struct iovec local = {v, sizeof *v}, remote = {(void *)(uintptr_t)addr, sizeof *v};
    return addr != 0 && process_vm_readv(getpid(), &local, 1, &remote, 1, 0) == (ssize_t)sizeof *v;
}

/* The regular file that path `addr` names relative to directory `dirfd` (at a system call's
 * entry): its status, and for `want_path` its absolute path in s->path; false if it is no
 * regular file (or the path cannot be read). */
static bool named_file(struct stream *s, int64_t dirfd, uint64_t addr, struct stat *st, bool want_path) {
    char rel[4096];
    if (!guest_string(addr, rel, sizeof rel))
        return false;
    if (fstatat((int)dirfd, rel, st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st->st_mode))
        return false;
    if (!want_path)
        return true;
    char dir[4096];
    const char *full = rel;
    if (rel[0] != '/' && dirfd != GUEST_AT_FDCWD) {
        char link[64];
        snprintf(link, sizeof link, "/proc/self/fd/%d", (int)dirfd);
        ssize_t l = readlink(link, dir, sizeof dir - 1);
        if (l <= 0)
            return false;
        dir[l] = 0;
        size_t n = strlen(dir);
        if (n + 1 + strlen(rel) >= sizeof dir)
            return false;
        dir[n] = '/';
        strcpy(dir + n + 1, rel);
        full = dir;
    }
    if (!realpath(full, s->path))
        return false;
    s->path_len = (int)strlen(s->path);
    s->path_size = (uint64_t)st->st_size;
    s->path_ino = (uint64_t)st->st_ino;
    return true;
}

/* Checks, after an open that returned descriptor `fd`, that the path read at guest address
 * `addr` (relative to `dirfd`) names the file opened: a mismatch means paths are not where
 * the plugin reads them, and it stops reading them. An O_TMPFILE open names a directory, not
 * its file, and is not checked. */
static void opened_as_named(int64_t dirfd, uint64_t addr, uint64_t flags, int fd) {
    char rel[4096];
    struct stat named, opened;
    if ((flags & GUEST_O_TMPFILE) == GUEST_O_TMPFILE || !guest_string(addr, rel, sizeof rel) || fstat(fd, &opened) != 0)
        return;
    if (fstatat((int)dirfd, rel, &named, 0) != 0 || named.st_ino != opened.st_ino || named.st_dev != opened.st_dev)
        paths_readable = false;
}

static void put_syscall(struct stream *s, int64_t nr, int64_t ret, bool with_file) {
    uint32_t words = 11 + (with_file ? 3 + (uint32_t)(s->path_len + 7) / 8 : 0);
    room(s, words);
    put(s, (uint64_t)words << 32 | (uint64_t)nr << 2 | TAG_SYSCALL);
    put(s, s->insns - s->last_insns);
    s->recorded += s->insns - s->last_insns;
    s->last_insns = s->insns;
    s->mark_insns = s->insns;
    put(s, now_ns());
    for (int i = 0; i < 6; i++)
        put(s, s->args[i]);
    put(s, (uint64_t)ret);
    put(s, with_file);
    if (with_file) {
        put(s, s->path_size);
        put(s, s->path_ino);
        put_bytes(s, s->path, s->path_len);
    }
}

static void vcpu_syscall(qemu_plugin_id_t id, unsigned int vcpu, int64_t num, uint64_t a1, uint64_t a2, uint64_t a3,
                         uint64_t a4, uint64_t a5, uint64_t a6, uint64_t a7, uint64_t a8) {
    (void)id, (void)a7, (void)a8;
    struct stream *s = stream_of(vcpu);
    s->nr = num;
    uint64_t a[6] = {a1, a2, a3, a4, a5, a6};
    memcpy(s->args, a, sizeof a);
    s->path_len = -1;
    s->trunc_ino = 0;
    /* clone3 starts a thread or a process as its flags say (glibc's pthread_create tries
     * it first; QEMU 7.2 refuses it, later versions may not). */
    if (num == NR_CLONE3 && !guest_u64(a1, &s->clone3_flags))
        s->clone3_flags = 0;
    if (num == NR_MMAP && !(a4 & MAP_ANONYMOUS) && (int64_t)a5 >= 0)
        file_of((int)a5, s);
    /* The file an open truncates or an unlink removes, before the call changes it. */
    struct stat st;
    switch (num) {
    case NR_OPEN:
    case NR_OPENAT:
    case NR_CREAT: {
        int64_t dirfd = num == NR_OPENAT ? (int64_t)a1 : GUEST_AT_FDCWD;
        uint64_t path = num == NR_OPENAT ? a2 : a1;
        uint64_t flags = num == NR_OPEN ? a2 : num == NR_OPENAT ? a3 : GUEST_O_TRUNC;
        if ((flags & GUEST_O_TRUNC) && named_file(s, dirfd, path, &st, false)) {
            s->trunc_ino = (uint64_t)st.st_ino;
            s->trunc_dev = (uint64_t)st.st_dev;
        }
        break;
    }
    case NR_UNLINK:
    case NR_UNLINKAT: {
        int64_t dirfd = num == NR_UNLINKAT ? (int64_t)a1 : GUEST_AT_FDCWD;
        uint64_t path = num == NR_UNLINKAT ? a2 : a1;
        bool dir = num == NR_UNLINKAT && (a3 & GUEST_AT_REMOVEDIR);
        if (!dir && (!named_file(s, dirfd, path, &st, true) || st.st_nlink != 1))
            s->path_len = -1;
        break;
    }
    }
    switch (num) {
    case NR_EXIT:
    case NR_EXIT_GROUP:
        /* No return: the record goes out now, and the thread's stream ends. */
        put_syscall(s, num, 0, false);
        close_stream(s);
        drop_stream(vcpu);
        break;
    case NR_EXECVE:
    case NR_EXECVEAT:
        /* A new image if it succeeds (its streams are opened afresh); this one's end. */
        put_syscall(s, num, 0, false);
        for (unsigned int v = 0; v < MAX_VCPUS; v++)
            if (streams[v])
                flush(streams[v]);
        break;
    }
}

static void vcpu_syscall_ret(qemu_plugin_id_t id, unsigned int vcpu, int64_t num, int64_t ret) {
    (void)id;
    struct stream *s = stream_of(vcpu);
    if (num != s->nr || num == NR_EXIT || num == NR_EXIT_GROUP)
        return;
    if (num == NR_EXECVE || num == NR_EXECVEAT) {
        /* Only a failed exec returns here; the record of its entry stands. */
        put_syscall(s, num, ret, false);
        return;
    }
    bool fork = num == NR_FORK || num == NR_VFORK ||
                (num == NR_CLONE3 && !(s->clone3_flags & (CLONE_VM | CLONE_THREAD))) ||
                (num == NR_CLONE && !(s->args[0] & (CLONE_VM | CLONE_THREAD)));
    if (fork && ret == 0) {
        /* The child process: the parent's buffers are the parent's to write. Only this
         * thread goes on here; it starts a stream of its own. */
        parent_pid = getppid();
        for (unsigned int v = 0; v < MAX_VCPUS; v++) {
            struct stream *o = streams[v];
            if (!o)
                continue;
            if (o->fd >= 0)
                close(o->fd);
            o->fd = -1;
            o->n = 0;
            if (o != s)
                drop_stream(v);
        }
        opened = 0;
        image = 0;
        open_stream(s);
        s->last_insns = s->insns;
        put_syscall(s, num, ret, false);
        return;
    }
    bool names_file = (num == NR_OPEN || num == NR_OPENAT || num == NR_CREAT || num == NR_OPENAT2) && ret >= 0;
    if (names_file && file_of((int)ret, s) && num != NR_OPENAT2) {
        int64_t dirfd = num == NR_OPENAT ? (int64_t)s->args[0] : GUEST_AT_FDCWD;
        uint64_t path = num == NR_OPENAT ? s->args[1] : s->args[0];
        uint64_t flags = num == NR_OPEN ? s->args[1] : num == NR_OPENAT ? s->args[2] : 0;
        opened_as_named(dirfd, path, flags, (int)ret);
    }
    bool truncated = false;
    struct stat st;
    if (names_file && s->trunc_ino != 0 && paths_readable && fstat((int)ret, &st) == 0)
        truncated = (uint64_t)st.st_ino == s->trunc_ino && (uint64_t)st.st_dev == s->trunc_dev;
    if ((num == NR_UNLINK || num == NR_UNLINKAT) && ret != 0)
        s->path_len = -1;
    put_syscall(s, num, ret, s->path_len >= 0);
    forget_recent(&s->data);
    forget_recent(&s->code);
    if (truncated) {
        /* The ftruncate(fd, 0) the open amounts to, right after it. */
        uint64_t saved[6];
        memcpy(saved, s->args, sizeof saved);
        memset(s->args, 0, sizeof s->args);
        s->args[0] = (uint64_t)ret;
        put_syscall(s, NR_FTRUNCATE, 0, false);
        memcpy(s->args, saved, sizeof saved);
    }
}

static void at_exit(qemu_plugin_id_t id, void *p) {
    (void)id, (void)p;
    for (unsigned int v = 0; v < MAX_VCPUS; v++)
        if (streams[v])
            close_stream(streams[v]);
}

EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc, char **argv) {
    (void)info;
    for (int i = 0; i < argc; i++) {
        if (strncmp(argv[i], "out=", 4) == 0) {
            snprintf(out_dir, sizeof out_dir, "%s", argv[i] + 4);
        } else if (strncmp(argv[i], "k=", 2) == 0) {
            long v = strtol(argv[i] + 2, NULL, 10);
            if (v < 1 || v > MAX_K) {
                fprintf(stderr, "pagesim capture plugin: k=%s: give 1 to %d\n", argv[i] + 2, MAX_K);
                return -1;
            }
            k = (uint32_t)v;
        } else if (strncmp(argv[i], "image=", 6) == 0) {
            image = (uint32_t)strtoul(argv[i] + 6, NULL, 10);
        } else {
            fprintf(stderr, "pagesim capture plugin: unknown argument %s (out=DIR, k=N)\n", argv[i]);
            return -1;
        }
    }
    if (!out_dir[0]) {
        fprintf(stderr, "pagesim capture plugin: no out=DIR\n");
        return -1;
    }
    for (hint_mask = 1; hint_mask < HINTS_PER_PAGE * k; hint_mask <<= 1)
        ;
    hint_mask -= 1;
    parent_pid = getppid();
    maps_before = read_maps();
    qemu_plugin_register_vcpu_tb_trans_cb(id, tb_trans);
    qemu_plugin_register_vcpu_syscall_cb(id, vcpu_syscall);
    qemu_plugin_register_vcpu_syscall_ret_cb(id, vcpu_syscall_ret);
    qemu_plugin_register_atexit_cb(id, at_exit, NULL);
    return 0;
}
