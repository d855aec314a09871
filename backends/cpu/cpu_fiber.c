/* Fibers for the CPU backend's kernels with barriers (cpu_fiber.h). */
#include "cpu_fiber.h"

#include "../../core/backend_impl.h"

#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#define GPUWS_FIBER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define GPUWS_FIBER_ASAN 1
#endif
#endif
#ifdef GPUWS_FIBER_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif

#if !defined(__x86_64__)
#include <ucontext.h>
#endif

struct cpu_fiber {
    void *sp; /* saved stack pointer (x86-64) */
#if !defined(__x86_64__)
    ucontext_t uc;
#endif
    char *stack;
    bool done;
    cpu_fiber_fn fn;
    void *arg;
    cpu_fibers *owner;
#ifdef GPUWS_FIBER_ASAN
    void *fake;               /* AddressSanitizer's fake stack of the fiber while it is switched out */
    const void *sched_bottom; /* the scheduler's stack, as AddressSanitizer reported it on the first switch */
    size_t sched_size;
#endif
};

#if defined(__x86_64__)
/* void gpuws__fiber_switch(void **save_sp, void *to_sp): saves the callee-saved registers on the current stack,
 * stores the stack pointer in *save_sp, and restores the same from to_sp. The SSE and x87 control words, which the
 * ABI also asks a callee to keep, are not switched: every fiber of a thread runs with the thread's own (kernels do
 * not change them), and loading them is slow. A new fiber's stack is laid out so that the restore "returns" into gpuws__fiber_start with the
 * fiber in r12 and the entry function in r13. */
void gpuws__fiber_switch(void **save_sp, void *to_sp);
__asm__(".text\n"
        ".globl gpuws__fiber_switch\n"
        ".hidden gpuws__fiber_switch\n"
        ".type gpuws__fiber_switch,@function\n"
        "gpuws__fiber_switch:\n"
        "    pushq %rbp\n"
        "    pushq %rbx\n"
        "    pushq %r12\n"
        "    pushq %r13\n"
        "    pushq %r14\n"
        "    pushq %r15\n"
        "    movq %rsp, (%rdi)\n"
        "    movq %rsi, %rsp\n"
        "    popq %r15\n"
        "    popq %r14\n"
        "    popq %r13\n"
        "    popq %r12\n"
        "    popq %rbx\n"
        "    popq %rbp\n"
        "    ret\n"
        ".size gpuws__fiber_switch, .-gpuws__fiber_switch\n"
        ".type gpuws__fiber_start,@function\n"
        "gpuws__fiber_start:\n"
        "    movq %r12, %rdi\n"
        "    callq *%r13\n"
        "    ud2\n"
        ".size gpuws__fiber_start, .-gpuws__fiber_start\n");
extern char gpuws__fiber_start[];
#endif

/* ---- AddressSanitizer: tell it which stack is current, or it reports the switch as an overflow ---------- */

#ifdef GPUWS_FIBER_ASAN
static void asan_to_fiber(cpu_fibers *fs, cpu_fiber *f, void **fake)
{
    __sanitizer_start_switch_fiber(fake, f->stack, fs->stack_bytes);
}
static void asan_in_scheduler(void *fake) { __sanitizer_finish_switch_fiber(fake, NULL, NULL); }
static void asan_in_fiber(cpu_fiber *f)
{
    const void *bottom;
    size_t size;
    __sanitizer_finish_switch_fiber(f->fake, &bottom, &size);
    if (bottom) f->sched_bottom = bottom, f->sched_size = size;
}
static void asan_to_scheduler(cpu_fiber *f, bool last)
{
    __sanitizer_start_switch_fiber(last ? NULL : &f->fake, f->sched_bottom, f->sched_size);
}
#else
static void asan_to_fiber(cpu_fibers *fs, cpu_fiber *f, void **fake) { (void)fs, (void)f, (void)fake; }
static void asan_in_scheduler(void *fake) { (void)fake; }
static void asan_in_fiber(cpu_fiber *f) { (void)f; }
static void asan_to_scheduler(cpu_fiber *f, bool last) { (void)f, (void)last; }
#endif

/* ---- switching ------------------------------------------------------------------------------------------ */

static void switch_to_scheduler(cpu_fiber *f, bool last)
{
    asan_to_scheduler(f, last);
#if defined(__x86_64__)
    gpuws__fiber_switch(&f->sp, f->owner->sched);
#else
    swapcontext(&f->uc, (ucontext_t *)f->owner->sched);
#endif
    asan_in_fiber(f);
}

static void fiber_entry(cpu_fiber *f)
{
    asan_in_fiber(f);
    f->fn(f->arg);
    f->done = true;
    switch_to_scheduler(f, true); /* never resumed */
    __builtin_unreachable();
}

#if !defined(__x86_64__)
static _Thread_local cpu_fiber *starting;
static void uc_entry(void) { fiber_entry(starting); }
#endif

/* Returns the fibers' stacks to the system. Under AddressSanitizer their shadow is cleared first: frames of
 * instrumented code left on a stack (a finished fiber never returns from fiber_entry) keep their redzones poisoned,
 * and the next mapping the kernel puts at that address (the sanitizer's own symbolizer allocates with mmap) would
 * inherit them: its reads were reported as stack-buffer-overflows. */
static void unmap_stacks(void *stacks, size_t bytes)
{
#ifdef GPUWS_FIBER_ASAN
    ASAN_UNPOISON_MEMORY_REGION(stacks, bytes);
#endif
    munmap(stacks, bytes);
}

static size_t page_size(void)
{
    long p = sysconf(_SC_PAGESIZE);
    return p > 0 ? (size_t)p : 4096;
}

static bool ensure(cpu_fibers *fs, size_t n)
{
    if (n <= fs->cap) return true;
    if (!fs->stack_bytes) fs->stack_bytes = 128 * 1024;
    const size_t guard = page_size(), slot = guard + fs->stack_bytes;
    size_t cap = fs->cap ? fs->cap : 32;
    while (cap < n) cap *= 2;
    cpu_fiber *f = gpuws__calloc(cap, sizeof *f);
    if (!f) return false;
    void *m = mmap(NULL, cap * slot, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED) {
        gpuws__free(f);
        return false;
    }
    for (size_t i = 0; i < cap; i++) {
        char *lo = (char *)m + i * slot;
        mprotect(lo, guard, PROT_NONE); /* an overflowing fiber faults instead of writing into its neighbour */
        f[i].stack = lo + guard;
    }
    if (fs->stacks) unmap_stacks(fs->stacks, fs->cap * slot);
    gpuws__free(fs->f);
    fs->f = f;
    fs->stacks = m;
    fs->cap = cap;
    return true;
}

static void start(cpu_fibers *fs, cpu_fiber *f, cpu_fiber_fn fn, void *arg)
{
    f->fn = fn;
    f->arg = arg;
    f->done = false;
    f->owner = fs;
#ifdef GPUWS_FIBER_ASAN
    f->fake = NULL;
    ASAN_UNPOISON_MEMORY_REGION(f->stack, fs->stack_bytes); /* frames a finished fiber left poisoned */
#endif
#if defined(__x86_64__)
    /* the six registers, then the "return address"; after the ret the stack is 16-byte aligned for the call */
    uintptr_t top = ((uintptr_t)f->stack + fs->stack_bytes) & ~(uintptr_t)15;
    uint64_t *sp = (uint64_t *)(top - 56);
    sp[0] = 0;                                /* r15 */
    sp[1] = 0;                                /* r14 */
    sp[2] = (uint64_t)(uintptr_t)fiber_entry; /* r13 */
    sp[3] = (uint64_t)(uintptr_t)f;           /* r12 */
    sp[4] = 0;                                /* rbx */
    sp[5] = 0;                                /* rbp */
    sp[6] = (uint64_t)(uintptr_t)gpuws__fiber_start;
    f->sp = sp;
#else
    getcontext(&f->uc);
    f->uc.uc_stack.ss_sp = f->stack;
    f->uc.uc_stack.ss_size = fs->stack_bytes;
    f->uc.uc_link = NULL;
    makecontext(&f->uc, uc_entry, 0);
#endif
}

static void resume(cpu_fibers *fs, cpu_fiber *f)
{
    void *fake = NULL;
    asan_to_fiber(fs, f, &fake);
#if defined(__x86_64__)
    gpuws__fiber_switch(&fs->sched, f->sp);
#else
    ucontext_t here;
    fs->sched = &here;
    starting = f; /* read only by a fiber's first switch */
    swapcontext(&here, &f->uc);
#endif
    asan_in_scheduler(fake);
}

bool cpu_fibers_run(cpu_fibers *fs, size_t n, cpu_fiber_fn fn, void *const *args)
{
    if (!ensure(fs, n)) return false;
    for (size_t i = 0; i < n; i++) start(fs, &fs->f[i], fn, args[i]);
    size_t live = n;
    while (live) {
        for (size_t i = 0; i < n; i++) {
            cpu_fiber *f = &fs->f[i];
            if (f->done) continue;
            fs->cur = i;
            resume(fs, f);
            if (f->done) live--;
        }
    }
    return true;
}

void cpu_fibers_yield(cpu_fibers *fs) { switch_to_scheduler(&fs->f[fs->cur], false); }

void cpu_fibers_free(cpu_fibers *fs)
{
    if (fs->stacks) unmap_stacks(fs->stacks, fs->cap * (page_size() + fs->stack_bytes));
    gpuws__free(fs->f);
    memset(fs, 0, sizeof *fs);
}
