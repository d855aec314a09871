/* CUDA backend: user programs (include/gpuws/program.h) compiled by NVRTC for the context's device and loaded with
 * the runtime's library API. NVRTC is opened at run time (dlopen, never linked), so a machine without the CUDA
 * toolkit still runs everything else; only gpuws_program_create on CUDA then says "NVRTC not available".
 *
 * Entry points: the dialect makes a GW_KERNEL a static inlined __device__ function, which a #define before the
 * user's source renames gw__body_<name>. After the source, each kernel gets an extern "C" __global__ <name> with
 * the same parameters, except that a GW_LOCAL pointer becomes its size in bytes (what the launcher passes for
 * gpuws_arg_local): the wrapper carves the pointers out of one extern __shared__ array, regions in parameter
 * order, each rounded up to 16 bytes (kernels/common/gpuws_cuda.cuh, gpuws_local: the built-in kernels' rule),
 * and calls the body.
 *
 * A GW_KERNEL under an #if that is false has no body, yet core still declares it (its reader does not evaluate
 * #if). For each kernel the generated text therefore also declares, after the source, a fallback
 * gw__body_<name> template that overload resolution picks only when the user's function does not exist (an exact
 * match to a non-template wins over a template), and a __device__ array gw__compiled_<name> whose size says
 * which one the wrapper calls: 1 byte for the user's body, 2 for the fallback. program_kernel reads that size
 * (cudaLibraryGetGlobal, no copy) and answers GPUWS_ERR_KERNEL_NOT_FOUND for a kernel that was not compiled, as
 * the other backends do. */
#include "cuda_internal.h"

#include <dlfcn.h>
#include <nvrtc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- NVRTC, loaded once per process --------------------------------------------------------------------- */

#define NVRTC_FUNCTIONS(X)                                                                                             \
    X(nvrtcGetErrorString)                                                                                             \
    X(nvrtcVersion) X(nvrtcGetNumSupportedArchs) X(nvrtcGetSupportedArchs) X(nvrtcCreateProgram)                       \
        X(nvrtcDestroyProgram) X(nvrtcCompileProgram) X(nvrtcGetProgramLogSize) X(nvrtcGetProgramLog)                  \
            X(nvrtcGetCUBINSize) X(nvrtcGetCUBIN) X(nvrtcGetPTXSize) X(nvrtcGetPTX)

/* The functions, typed from nvrtc.h's own declarations. */
static struct {
#define NV_MEMBER(f) __typeof__(&f) f;
    NVRTC_FUNCTIONS(NV_MEMBER)
#undef NV_MEMBER
} nv;

#define MAX_ARCHS 64
static pthread_mutex_t nv_lock = PTHREAD_MUTEX_INITIALIZER;
static bool nv_tried, nv_loaded; /* under nv_lock; nv and the fields below are written before nv_loaded */
static char nv_reason[512];
static char nv_override[256]; /* gpuws__cuda_nvrtc_library's name; "" = the sonames below */
static int nv_major, nv_minor;
static int nv_archs[MAX_ARCHS]; /* the sm_XY it compiles for, as 10 * X + Y, ascending */
static int nv_narchs;

static void nvrtc_open(void)
{
    static const char *const names[] = { "libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so" };
    const size_t count = nv_override[0] ? 1 : sizeof names / sizeof names[0];
    char first_error[384] = "";
    void *h = NULL;
    const char *name = NULL;
    for (size_t i = 0; i < count && !h; i++) {
        name = nv_override[0] ? nv_override : names[i];
        h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
        if (!h && !first_error[0]) gpuws__strlcpy(first_error, dlerror(), sizeof first_error);
    }
    if (!h) {
        snprintf(nv_reason, sizeof nv_reason, "%s%s", first_error,
                 nv_override[0] ? "" : " (also tried libnvrtc.so.12 and libnvrtc.so)");
        return;
    }
    /* The handle stays open for the life of the process (also after gpuws__cuda_nvrtc_library). */
#define NV_LOAD(f)                                                                                                     \
    if (!(*(void **)(&nv.f) = dlsym(h, #f))) {                                                                         \
        snprintf(nv_reason, sizeof nv_reason, "%s lacks %s (NVRTC 11.2 or newer is needed)", name, #f);                \
        return;                                                                                                        \
    }
    NVRTC_FUNCTIONS(NV_LOAD)
#undef NV_LOAD
    int n = 0;
    if (nv.nvrtcVersion(&nv_major, &nv_minor) != NVRTC_SUCCESS || nv.nvrtcGetNumSupportedArchs(&n) != NVRTC_SUCCESS ||
        n <= 0 || n > MAX_ARCHS || nv.nvrtcGetSupportedArchs(nv_archs) != NVRTC_SUCCESS) {
        snprintf(nv_reason, sizeof nv_reason, "%s does not report its version and architectures", name);
        return;
    }
    nv_narchs = n;
    nv_loaded = true;
}

/* Whether NVRTC can be used; fills reason when it cannot. */
static bool nvrtc_load(char *reason, size_t n)
{
    pthread_mutex_lock(&nv_lock);
    if (!nv_tried) {
        nv_tried = true;
        nvrtc_open();
    }
    const bool ok = nv_loaded;
    if (!ok) gpuws__strlcpy(reason, nv_reason, n);
    pthread_mutex_unlock(&nv_lock);
    return ok;
}

void gpuws__cuda_nvrtc_library(const char *name)
{
    pthread_mutex_lock(&nv_lock);
    nv_tried = nv_loaded = false;
    gpuws__strlcpy(nv_override, name ? name : "", sizeof nv_override);
    pthread_mutex_unlock(&nv_lock);
}

/* ---- the generated text --------------------------------------------------------------------------------- */

/* The wrapper's arguments to the body: gw__p<j>, or gw__l<j> for a GW_LOCAL pointer. */
static void call_args(gpuws__strbuf *out, const gpuws__kernel_decl *d)
{
    for (size_t j = 0; j < d->nparams; j++)
        gpuws__sb_printf(out, "%sgw__%c%zu", j ? ", " : "", d->params[j].kind == 's' ? 'l' : 'p', j);
}

static void wrapper(gpuws__strbuf *out, const gpuws__kernel_decl *d)
{
    const char *name = d->name;
    /* Used only where the user's gw__body_<name> does not exist (a kernel under a false #if). */
    gpuws__sb_printf(out,
                     "template <class... A> static __device__ gw__absent gw__body_%s(A...) "
                     "{ return gw__absent(); }\n",
                     name);
    gpuws__sb_printf(out, "extern \"C\" __global__ void %s(", name);
    for (size_t j = 0; j < d->nparams; j++) {
        const char *type = d->params[j].kind == 's' ? "unsigned long long" : d->params[j].type;
        gpuws__sb_printf(out, "%s%s gw__p%zu", j ? ", " : "", type, j);
    }
    gpuws__sb_puts(out, d->nparams ? ")\n{\n" : "void)\n{\n");
    size_t prev = SIZE_MAX; /* the GW_LOCAL parameter before this one */
    for (size_t j = 0; j < d->nparams; j++) {
        const gpuws__param *q = &d->params[j];
        if (q->kind != 's') continue;
        if (prev == SIZE_MAX)
            gpuws__sb_puts(out, "    extern __shared__ __align__(16) unsigned char gw__dynamic_shared[];\n"
                                "    unsigned long long gw__offset = 0;\n");
        else gpuws__sb_printf(out, "    gw__offset += (gw__p%zu + 15) & ~15ull;\n", prev);
        gpuws__sb_printf(out, "    %s gw__l%zu = (%s)(gw__dynamic_shared + gw__offset);\n", q->type, j, q->type);
        prev = j;
    }
    gpuws__sb_printf(out, "    gw__body_%s(", name);
    call_args(out, d);
    gpuws__sb_puts(out, ");\n}\n");
    /* 1 byte when the call above resolves to the user's function, 2 when to the fallback */
    gpuws__sb_printf(out,
                     "extern \"C\" __device__ unsigned char gw__compiled_%s[1 + "
                     "gw__is_absent<decltype(gw__body_%s(",
                     name, name);
    for (size_t j = 0; j < d->nparams; j++)
        gpuws__sb_printf(out, "%sgw__value<%s>()", j ? ", " : "", d->params[j].type);
    gpuws__sb_puts(out, "))>::value] = {};\n");
}

gpuws_status gpuws__cuda_program_text(const gpuws_program *p, gpuws__text_place where, gpuws__strbuf *out)
{
    if (where == GPUWS__TEXT_BEFORE) {
        for (size_t i = 0; i < p->ndecls; i++)
            gpuws__sb_printf(out, "#define %s gw__body_%s\n", p->decls[i].name, p->decls[i].name);
        return GPUWS_OK;
    }
    if (!p->ndecls) return GPUWS_OK;
    for (size_t i = 0; i < p->ndecls; i++) gpuws__sb_printf(out, "#undef %s\n", p->decls[i].name);
    gpuws__sb_puts(out, "struct gw__absent {};\n"
                        "template <class T> struct gw__is_absent { enum { value = 0 }; };\n"
                        "template <> struct gw__is_absent<gw__absent> { enum { value = 1 }; };\n"
                        "template <class T> __device__ T gw__value();\n");
    for (size_t i = 0; i < p->ndecls; i++) wrapper(out, &p->decls[i]);
    return GPUWS_OK;
}

/* ---- building ------------------------------------------------------------------------------------------- */

static gpuws_status nvrtc_fail(nvrtcResult r, const char *what, const char *file)
{
    const gpuws_status st = r == NVRTC_ERROR_OUT_OF_MEMORY ? GPUWS_ERR_OUT_OF_MEMORY
                            : r == NVRTC_ERROR_COMPILATION ? GPUWS_ERR_BUILD
                                                           : GPUWS_ERR_INTERNAL;
    return gpuws__error(st, "%s(%s): %s (%d)", what, file, nv.nvrtcGetErrorString(r), (int)r);
}

/* Compiles p->source with the options; on success *image is the cubin or the NUL-terminated PTX (malloc'd).
 * p->log gets NVRTC's log, also on a compile error. */
static gpuws_status compile(gpuws_program *p, const char *const *opts, int nopts, bool cubin, char **image, size_t *len)
{
    nvrtcProgram prog;
    nvrtcResult r = nv.nvrtcCreateProgram(&prog, p->source, p->file_name, 0, NULL, NULL);
    if (r != NVRTC_SUCCESS) return nvrtc_fail(r, "nvrtcCreateProgram", p->file_name);
    const nvrtcResult built = nv.nvrtcCompileProgram(prog, nopts, opts);
    size_t n = 0;
    gpuws_status st = GPUWS_OK;
    if ((r = nv.nvrtcGetProgramLogSize(prog, &n)) != NVRTC_SUCCESS) {
        st = nvrtc_fail(r, "nvrtcGetProgramLogSize", p->file_name);
    } else if (!(p->log = gpuws__calloc(1, n + 1))) { /* n counts the NUL; 0 is taken as "no log" */
        st = gpuws__error(GPUWS_ERR_OUT_OF_MEMORY, "allocating a build log");
    } else if (n && (r = nv.nvrtcGetProgramLog(prog, p->log)) != NVRTC_SUCCESS) {
        st = nvrtc_fail(r, "nvrtcGetProgramLog", p->file_name);
    }
    if (!st && built != NVRTC_SUCCESS) st = nvrtc_fail(built, "nvrtcCompileProgram", p->file_name);
    if (!st) {
        r = cubin ? nv.nvrtcGetCUBINSize(prog, &n) : nv.nvrtcGetPTXSize(prog, &n);
        if (r != NVRTC_SUCCESS) st = nvrtc_fail(r, cubin ? "nvrtcGetCUBINSize" : "nvrtcGetPTXSize", p->file_name);
        else if (!(*image = malloc(n ? n : 1)))
            st = gpuws__error(GPUWS_ERR_OUT_OF_MEMORY, "allocating a %zu-byte image", n);
        else if ((r = cubin ? nv.nvrtcGetCUBIN(prog, *image) : nv.nvrtcGetPTX(prog, *image)) != NVRTC_SUCCESS) {
            free(*image);
            *image = NULL;
            st = nvrtc_fail(r, cubin ? "nvrtcGetCUBIN" : "nvrtcGetPTX", p->file_name);
        }
        *len = n;
    }
    nv.nvrtcDestroyProgram(&prog);
    return st;
}

/* Loads a cubin or PTX into p->impl (the runtime copies it: the caller keeps image). */
static gpuws_status load(gpuws_program *p, const void *image)
{
    cudaLibrary_t lib;
    cudaError_t e = cudaLibraryLoadData(&lib, image, NULL, NULL, 0, NULL, NULL, 0);
    if (e != cudaSuccess) {
        char what[300];
        snprintf(what, sizeof what, "loading the compiled %.200s", p->file_name);
        return gpuws__cuda_fail(e, what);
    }
    p->impl = lib;
    return GPUWS_OK;
}

gpuws_status gpuws__cuda_program_build(gpuws_program *p)
{
    char reason[512];
    if (!nvrtc_load(reason, sizeof reason))
        return gpuws__error(GPUWS_ERR_BACKEND_UNAVAILABLE, "NVRTC not available: %s", reason);
    const int dev = gpuws__cuda_device(p->ctx);
    int major = 0, minor = 0, driver = 0;
    cudaError_t e = cudaSetDevice(dev);
    if (e == cudaSuccess) e = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev);
    if (e == cudaSuccess) e = cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev);
    if (e == cudaSuccess) e = cudaDriverGetVersion(&driver);
    if (e != cudaSuccess) return gpuws__cuda_fail(e, "reading the device's compute capability");

    /* A cubin for the device's exact architecture; PTX for the newest older one when NVRTC does not know the
     * device (the driver compiles it when loading). */
    const int want = 10 * major + minor;
    int older = 0;
    bool exact = false;
    for (int i = 0; i < nv_narchs; i++) {
        if (nv_archs[i] == want) exact = true;
        else if (nv_archs[i] < want && nv_archs[i] > older) older = nv_archs[i];
    }
    if (!exact && !older)
        return gpuws__error(GPUWS_ERR_UNSUPPORTED,
                            "NVRTC %d.%d cannot compile for %s (sm_%d): its oldest "
                            "architecture is sm_%d",
                            nv_major, nv_minor, p->ctx->info.name, want, nv_archs[0]);
    char arch[64];
    snprintf(arch, sizeof arch, "--gpu-architecture=%s_%d", exact ? "sm" : "compute", exact ? want : older);
    /* NVRTC's defaults stay: --fmad=true (a * b + c may become one fused multiply-add), IEEE division and square
     * root, denormals kept; GPUWS_PROGRAM_FAST_MATH relaxes them. -G implies line information. */
    const char *opts[4] = { arch, "--std=c++17" };
    int nopts = 2;
    if (p->flags & GPUWS_PROGRAM_DEBUG) opts[nopts++] = "-G";
    if (p->flags & GPUWS_PROGRAM_FAST_MATH) opts[nopts++] = "--use_fast_math";

    /* The cache key names everything the image depends on; the dialect is part of the source. */
    gpuws__strbuf key = { 0 };
    gpuws__sb_printf(&key, "backend=cuda\ndevice=%s\narch=sm_%d\nnvrtc=%d.%d\ndriver=%d\noptions=", p->ctx->info.name,
                     want, nv_major, nv_minor, driver);
    for (int i = 0; i < nopts; i++) gpuws__sb_printf(&key, "%s%s", i ? " " : "", opts[i]);
    gpuws__sb_printf(&key, "\nsource=%s:%zu:%016llx\n", p->file_name, p->source_len,
                     (unsigned long long)gpuws__fnv1a(p->source, p->source_len, GPUWS__FNV_SEED));
    if (key.oom) {
        gpuws__sb_free(&key);
        return gpuws__error(GPUWS_ERR_OUT_OF_MEMORY, "allocating a cache key");
    }
    const char *ext = exact ? ".cubin" : ".ptx";
    gpuws__cache cache;
    gpuws__cache_init(&cache);
    const bool use_cache = cache.enabled && !(p->flags & GPUWS_PROGRAM_NO_CACHE);

    unsigned char *cached = NULL;
    size_t len = 0;
    if (use_cache) {
        gpuws_status cst = gpuws__cache_load(&cache, key.s, ext, &cached, &len);
        if (cst) {
            gpuws__sb_free(&key);
            return cst;
        }
    }
    if (cached) {
        /* PTX must end with its NUL; a cubin's size is in its own header */
        const bool ok = (exact || (len && cached[len - 1] == 0)) && !load(p, cached);
        gpuws__free(cached);
        if (ok) {
            gpuws__sb_free(&key);
            gpuws__log(GPUWS__LOG_DEBUG, "%s loaded from the cache", p->file_name);
            return GPUWS_OK;
        }
        gpuws__log(GPUWS__LOG_INFO, "the cached image of %s was rejected; rebuilding from source", p->file_name);
    }
    char *image = NULL;
    gpuws_status st = compile(p, opts, nopts, exact, &image, &len);
    if (!st) st = load(p, image);
    if (!st && use_cache) gpuws__cache_store(&cache, key.s, ext, image, len);
    free(image);
    gpuws__sb_free(&key);
    return st;
}

void gpuws__cuda_program_destroy(gpuws_program *p)
{
    cudaSetDevice(gpuws__cuda_device(p->ctx));
    cudaLibraryUnload((cudaLibrary_t)p->impl);
}

gpuws_status gpuws__cuda_program_kernel(gpuws_program *p, size_t index, gpuws_kernel *k)
{
    const char *name = p->decls[index].name;
    cudaLibrary_t lib = p->impl;
    char what[300];
    snprintf(what, sizeof what, "looking up kernel '%.200s'", name);
    cudaError_t e = cudaSetDevice(gpuws__cuda_device(p->ctx));
    if (e != cudaSuccess) return gpuws__cuda_fail(e, what);
    char *marker = malloc(strlen(name) + sizeof "gw__compiled_");
    if (!marker) return gpuws__error(GPUWS_ERR_OUT_OF_MEMORY, "%s", what);
    strcpy(marker, "gw__compiled_");
    strcat(marker, name);
    void *addr = NULL;
    size_t bytes = 0;
    e = cudaLibraryGetGlobal(&addr, &bytes, lib, marker);
    free(marker);
    if (e != cudaSuccess) return gpuws__cuda_fail(e, what); /* the marker is always generated */
    if (bytes != 1)
        return gpuws__error(GPUWS_ERR_KERNEL_NOT_FOUND,
                            "program '%s' declares kernel '%s' but the CUDA build has none "
                            "(is it inside an #if?)",
                            p->file_name, name);
    cudaKernel_t kernel = NULL;
    struct cudaFuncAttributes attr;
    e = cudaLibraryGetKernel(&kernel, lib, name);
    if (e == cudaSuccess) e = cudaFuncGetAttributes(&attr, (const void *)kernel);
    if (e != cudaSuccess) return gpuws__cuda_fail(e, what);
    return gpuws__cuda_kernel_init(k, (const void *)kernel, &attr);
}
