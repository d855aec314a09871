/* Reading a caller's options struct: the struct_size scheme of include/gpuws.h ("Options structs grow"). Every public
 * call that takes an options struct reads it through gpuws__options_read into a full struct of this library's
 * size, filled with the defaults first, and never looks at the caller's struct again. */
#ifndef GPUWS_CORE_OPTIONS_H
#define GPUWS_CORE_OPTIONS_H

#include "backend_impl.h" /* gpuws__error */

#include <stddef.h>
#include <string.h>

/* Copies the caller's options (NULL = keep *out, the defaults) into *out (this library's struct of `size` bytes, its
 * first member the size_t struct_size) and sets out->struct_size to `size`. The caller's struct_size says how much
 * of it there is: 0 means `base` (the size of the struct in gpuws 0.2, when struct_size came: callers that
 * zero-initialise); less than `base` is GPUWS_ERR_INVALID_ARGUMENT; more than `size` (a program built against a
 * newer header) is accepted only when every byte this library does not know is zero (fields added later have zero
 * as their default), else GPUWS_ERR_UNSUPPORTED naming the first such byte. what: "context options" (messages). */
static inline gpuws_status gpuws__options_read(const void *in, void *out, size_t size, size_t base, const char *what)
{
    if (!in) return GPUWS_OK;
    size_t given;
    memcpy(&given, in, sizeof given);
    if (given == 0) given = base;
    if (given < base)
        return gpuws__error(GPUWS_ERR_INVALID_ARGUMENT,
                            "%s: struct_size %zu is less than the %zu bytes of the "
                            "smallest version of the struct (set it with the _OPTIONS_INIT macro, or leave it 0)",
                            what, given, base);
    for (size_t i = size; i < given; i++)
        if (((const unsigned char *)in)[i])
            return gpuws__error(GPUWS_ERR_UNSUPPORTED,
                                "%s: struct_size %zu, but this gpuws (%d.%d.%d) knows only the "
                                "first %zu bytes and byte %zu is set: a field of a newer gpuws that this library "
                                "cannot honour (the program was built against a newer header)",
                                what, given, GPUWS_VERSION_MAJOR, GPUWS_VERSION_MINOR, GPUWS_VERSION_PATCH, size, i);
    memcpy(out, in, given < size ? given : size);
    memcpy(out, &size, sizeof size);
    return GPUWS_OK;
}

/* The end of a struct's last field in gpuws 0.2: what struct_size 0 stands for, forever (fields added later go
 * after it, so these offsets never change). */
#define GPUWS__OPTIONS_END(T, last)         (offsetof(T, last) + sizeof(((T *)0)->last))
#define GPUWS__CONTEXT_OPTIONS_BASE         GPUWS__OPTIONS_END(gpuws_context_options, opencl_platform)
#define GPUWS__PROGRAM_OPTIONS_BASE         GPUWS__OPTIONS_END(gpuws_program_options, flags)
#define GPUWS__CONVOLVE2D_OPTIONS_BASE      GPUWS__OPTIONS_END(gpuws_convolve2d_options, fill_value)
#define GPUWS__SIGMA_CLIP_OPTIONS_BASE      GPUWS__OPTIONS_END(gpuws_sigma_clip_options, max_iterations)
#define GPUWS__SOURCES_OPTIONS_BASE         GPUWS__OPTIONS_END(gpuws_sources_options, want_labels)
#define GPUWS__PIPELINE_OPTIONS_BASE        GPUWS__OPTIONS_END(gpuws_pipeline_options, streams)
#define GPUWS__CONVOLVE2D_HOST_OPTIONS_BASE GPUWS__OPTIONS_END(gpuws_convolve2d_host_options, progress_user)
#define GPUWS__CONVOLVE1D_HOST_OPTIONS_BASE GPUWS__OPTIONS_END(gpuws_convolve1d_host_options, max_device_bytes)
#define GPUWS__LABEL_HOST_OPTIONS_BASE      GPUWS__OPTIONS_END(gpuws_label_host_options, progress_user)
#define GPUWS__BACKGROUND_OPTIONS_BASE      GPUWS__OPTIONS_END(gpuws_background_options, mask)
#define GPUWS__APERTURE_OPTIONS_BASE        GPUWS__OPTIONS_END(gpuws_aperture_options, kron_rmin)
#define GPUWS__EXTRACT_OPTIONS_BASE         GPUWS__OPTIONS_END(gpuws_extract_options, sep_version)
#define GPUWS__BACKGROUND_HOST_OPTIONS_BASE GPUWS__OPTIONS_END(gpuws_background_host_options, progress_user)
#define GPUWS__EXTRACT_HOST_OPTIONS_BASE    GPUWS__OPTIONS_END(gpuws_extract_host_options, background_result)
#define GPUWS__APERTURE_HOST_OPTIONS_BASE   GPUWS__OPTIONS_END(gpuws_aperture_host_options, max_device_bytes)

#endif
