/* TEMPORARY: stand-ins for the three pipeline steps that another branch implements (kernels/sigma_clip,
 * kernels/threshold, kernels/measure). They are weak symbols: once those branches are merged their strong
 * definitions win at link time, and this file is deleted in the same merge (in a static library the linker takes
 * whichever archive member defining a symbol it meets first, so the weak stand-ins must not outlive the merge).
 * Until then every call fails with GPUWS_ERR_UNSUPPORTED and "not merged yet", which the pipeline tests recognise
 * and skip on. */
#include "../common/driver.h"

#define NOT_MERGED(fn) gpuws__error(GPUWS_ERR_UNSUPPORTED, "%s: not merged yet (implemented in another branch)", fn)

__attribute__((weak)) gpuws_status gpuws_sigma_clip(gpuws_stream *stream, size_t n, const gpuws_buffer *data,
                                                    const gpuws_sigma_clip_options *options, gpuws_sigma_clip_result *result)
{
    (void)stream, (void)n, (void)data, (void)options, (void)result;
    return NOT_MERGED("gpuws_sigma_clip");
}

__attribute__((weak)) gpuws_status gpuws_threshold(gpuws_stream *stream, size_t n, const gpuws_buffer *data,
                                                   float threshold, gpuws_buffer *mask)
{
    (void)stream, (void)n, (void)data, (void)threshold, (void)mask;
    return NOT_MERGED("gpuws_threshold");
}

__attribute__((weak)) gpuws_status gpuws_measure(gpuws_stream *stream, size_t width, size_t height,
                                                 const gpuws_buffer *data, const gpuws_buffer *labels, size_t num_labels,
                                                 gpuws_buffer *out)
{
    (void)stream, (void)width, (void)height, (void)data, (void)labels, (void)num_labels, (void)out;
    return NOT_MERGED("gpuws_measure");
}
