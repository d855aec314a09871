/* Experiment (not part of the library): LD_PRELOAD'ed into a test run, says where a process that crashes died. For
 * crashes that come and go (PoCL 5 on the GPU machine: about one run of test_convolve2d_separable's long-factor cases
 * in ten, 2026-11-22, with no message): on SIGSEGV, SIGBUS, SIGILL, SIGFPE or SIGABRT it writes the signal, the
 * faulting address, the thread and a backtrace (the exported names of each frame's library) to stderr, then lets the
 * signal kill the process as before. Criterion's workers are forked from the test binary, so they inherit it.
 * build: gcc -shared -fPIC -O1 bench/experiments/crash_trace.c -o /tmp/crash_trace.so
 * usage: LD_PRELOAD=/tmp/crash_trace.so ./build/tests/test_x ... */
#define _GNU_SOURCE
#include <execinfo.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static char alt_stack[64 * 1024];

static void on_signal(int sig, siginfo_t *info, void *uctx)
{
    (void)uctx;
    char line[256];
    const int n = snprintf(line, sizeof line, "\n[crash_trace] pid %d thread %ld: signal %d (%s), address %p\n",
                           (int)getpid(), (long)syscall(SYS_gettid), sig, strsignal(sig), info->si_addr);
    if (n > 0) (void)!write(2, line, (size_t)n);
    void *frames[64];
    const int depth = backtrace(frames, 64);
    backtrace_symbols_fd(frames, depth, 2);
    /* SA_RESETHAND put the default action back: the signal kills the process as it would have */
    raise(sig);
}

__attribute__((constructor)) static void install(void)
{
    stack_t ss = {.ss_sp = alt_stack, .ss_size = sizeof alt_stack, .ss_flags = 0};
    sigaltstack(&ss, NULL);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_signal;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESETHAND;
    sigemptyset(&sa.sa_mask);
    const int sigs[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) sigaction(sigs[i], &sa, NULL);
    /* backtrace() loads libgcc on first use: do it now, not inside the handler */
    void *f[1];
    backtrace(f, 1);
}
