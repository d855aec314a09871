/* The fault-injection harness's declarations, shared by tests/test_faults.c (the harness, core rows, CLI rows,
 * real out-of-memory) and the row files in tests/faults/ (algorithms.c: one row per public algorithm call).
 * How a row runs and what it must do: docs/reliability.md, "Allocation failure". */
#ifndef GPUWS_TEST_FAULTS_H
#define GPUWS_TEST_FAULTS_H

#include "support.h"

#include <stdbool.h>

/* core/alloc.h: the library's allocation counter and its fault injector */
bool gpuws__fault_alloc_countdown(long n);
bool gpuws__fault_device_countdown(long n);
unsigned long gpuws__device_fallbacks(void);
long gpuws__alloc_live(void);

#define FAULT_N          1000 /* elements of the fixture's input arrays */
#define FAULT_W          40   /* the inputs seen as an image: FAULT_W columns x FAULT_H rows */
#define FAULT_H          25
#define FAULT_OUT_BYTES  (16 * FAULT_N) /* room in f->out */
#define FAULT_OUT2_BYTES 64             /* room in f->out2 */

/* Made fresh for every run of a row (before the countdown is armed, so nothing here is fault-injected). */
typedef struct fault_fixture {
    gpuws_backend_kind kind;
    gpuws_context *ctx;
    gpuws_stream *stream; /* fresh: its scratch memory is allocated by the first algorithm that needs it */
    gpuws_buffer *in;     /* FAULT_N f32: 1, 2, 3, ... */
    gpuws_buffer *in64;   /* FAULT_N f64: 1, 2, 3, ... */
    gpuws_buffer *in32;   /* FAULT_N int32: 1, 2, 3, ... */
    gpuws_buffer *in16;   /* FAULT_N int16: 1, 2, 3, ... */
    gpuws_buffer *mask;   /* FAULT_W x FAULT_H uint8: fault_mask_pixel */
    gpuws_buffer *labels; /* FAULT_W x FAULT_H int32: fault_label_pixel, labels 1..4 */
    /* Outputs, poisoned (TEST_POISON_BYTE); the harness checks every byte is still poison after a failure. */
    gpuws_buffer *out;  /* FAULT_OUT_BYTES */
    gpuws_buffer *out2; /* FAULT_OUT2_BYTES: a second output (a count, a hit total) */
    /* Rows made from an algorithm's case (kernels/common/cases.h): its state, set up at the TINY size on ctx, and
     * its outputs, poisoned; the harness checks them like out and out2. */
    const gpuws__case *algorithm_case;
    void *case_state;
    bench_output case_out[BENCH_MAX_OUTPUTS];
    size_t case_nout;
} fault_fixture;

/* f->mask: 2 x 2 blocks every 5 pixels, each with one more pixel touching its corner diagonally, so the blocks
 * are 8 x 5 = 40 components with connectivity 8 and 80 with connectivity 4. */
static inline unsigned char fault_mask_pixel(int row, int col)
{
    const int r = row % 5, c = col % 5;
    return (r < 2 && c < 2) || (r == 2 && c == 2);
}

/* f->labels: four quadrants labelled 1..4, with background (0) where (row + col) % 7 == 0. */
#define FAULT_NUM_LABELS 4
static inline int fault_label_pixel(int row, int col)
{
    return (row + col) % 7 == 0 ? 0 : 1 + (col >= FAULT_W / 2) + 2 * (row >= FAULT_H / 2);
}

typedef struct fault_case {
    const char *name;
    unsigned backends; /* bit per gpuws_backend_kind */
    /* Performs the operation; on success checks its result and releases whatever it created. */
    gpuws_status (*op)(fault_fixture *f);
    const gpuws__case *algorithm_case; /* a row made from a case (NULL for FAULT_CASE rows) */
} fault_case;

#define FAULT_CPU (1u << GPUWS_BACKEND_CPU)
#define FAULT_GPU ((1u << GPUWS_BACKEND_OPENCL) | (1u << GPUWS_BACKEND_CUDA))
#define FAULT_ALL (FAULT_CPU | FAULT_GPU)

void fault_register(const fault_case *c);

/* A row calls this with the call's status before it looks at anything: it disarms the injection (so the row's
 * own checks cannot fail an allocation; the harness still learns whether one failed) and, when st is GPUWS_OK,
 * waits for f->stream. Returns st == GPUWS_OK: whether to check the result. */
bool fault_ok(fault_fixture *f, gpuws_status st);

/* FAULT_CASE(name, backends) { ...the operation on f...; return status; } */
#define FAULT_CASE(Name, Backends)                                                                                     \
    static gpuws_status fault_op_##Name(fault_fixture *f);                                                             \
    __attribute__((constructor)) static void fault_register_##Name(void)                                               \
    {                                                                                                                  \
        static const fault_case c = { #Name, (Backends), fault_op_##Name, NULL };                                      \
        fault_register(&c);                                                                                            \
    }                                                                                                                  \
    static gpuws_status fault_op_##Name(__attribute__((unused)) fault_fixture *f)

#endif
