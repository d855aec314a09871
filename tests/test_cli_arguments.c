/* The arguments of every gpuws command, parsed one way (tools/commands.h): numbers strictly (the whole argument, no
 * spaces around it, no hex, within a stated range; a negative number is a value, never an option), names never
 * empty, each option once, and options that apply to one mode only refused in the other. Every fault is a usage
 * error: exit 2, a message that names the option or operand and what it needs, nothing run, nothing written.
 *
 * Two tables:
 *   count_cases / bytes_cases / real_cases — tool_parse_count, tool_parse_bytes and tool_parse_real themselves;
 *   cli_cases                — the built gpuws binary (GPUWS_CLI), run in a fresh directory holding img.fits and
 *                              k.fits; after each row the directory must hold exactly those two files. */
#include "support.h"
#include "commands.h"
#include "fits_io.h"
#include "run_cli.h"

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ================================================================================================================
 * The parsers
 * ================================================================================================================ */

typedef struct {
    const char *text;
    uint64_t max;
    int ok;
    uint64_t value;
} count_case;

static const count_case count_cases[] = {
    { "0", 10, 1, 0 },
    { "1000000", UINT64_MAX, 1, 1000000 },
    { "1e6", UINT64_MAX, 1, 1000000 },
    { "1.5e3", UINT64_MAX, 1, 1500 },
    { "10^6", UINT64_MAX, 1, 1000000 },
    { "2^31", (uint64_t)1 << 31, 1, (uint64_t)1 << 31 },
    { "18446744073709551615", UINT64_MAX, 1, UINT64_MAX },
    { "18446744073709551616", UINT64_MAX, 0, 0 }, /* 2^64 */
    { "11", 10, 0, 0 },                           /* past max */
    { "1e30", UINT64_MAX, 0, 0 },                 /* not exact in double */
    { "1.5", UINT64_MAX, 0, 0 },
    { "", UINT64_MAX, 0, 0 },
    { " 5", UINT64_MAX, 0, 0 },
    { "5 ", UINT64_MAX, 0, 0 },
    { "\t5", UINT64_MAX, 0, 0 },
    { "+5", UINT64_MAX, 0, 0 },
    { "-1", UINT64_MAX, 0, 0 },
    { "-0", UINT64_MAX, 0, 0 },
    { "0x10", UINT64_MAX, 0, 0 },
    { "3abc", UINT64_MAX, 0, 0 },
    { "1e", UINT64_MAX, 0, 0 },
    { "1e-3", UINT64_MAX, 0, 0 },
    { "2^", UINT64_MAX, 0, 0 },
    { "^2", UINT64_MAX, 0, 0 },
    { "inf", UINT64_MAX, 0, 0 },
    { "nan", UINT64_MAX, 0, 0 },
    { "1,000", UINT64_MAX, 0, 0 },
};
#define N_COUNT (sizeof count_cases / sizeof count_cases[0])

ParameterizedTestParameters(cli_arguments, parse_count)
{
    static int idx[N_COUNT];
    for (size_t i = 0; i < N_COUNT; i++) idx[i] = (int)i;
    return cr_make_param_array(int, idx, N_COUNT);
}

#define UNWRITTEN 0xABABABABABABABABULL

/* A parser's answer for a row: refused with the output untouched, or accepted with the value. */
static void expect_parsed(const count_case *c, int rc, uint64_t got)
{
    if (!c->ok) {
        cr_assert_eq(rc, -1, "'%s' (max %llu) was accepted as %llu", c->text, (unsigned long long)c->max,
                     (unsigned long long)got);
        cr_assert_eq(got, UNWRITTEN, "'%s': a refused value wrote the output", c->text);
        return;
    }
    cr_assert_eq(rc, 0, "'%s' (max %llu) was refused", c->text, (unsigned long long)c->max);
    cr_assert_eq(got, c->value, "'%s': %llu, wanted %llu", c->text, (unsigned long long)got,
                 (unsigned long long)c->value);
}

ParameterizedTest(int *i, cli_arguments, parse_count)
{
    const count_case *c = &count_cases[*i];
    uint64_t got = UNWRITTEN;
    const int rc = tool_parse_count(c->text, c->max, &got);
    expect_parsed(c, rc, got);
}

/* tool_parse_bytes: a count as above, optionally followed by K, M, G or T (powers of 1024). */
static const count_case bytes_cases[] = {
    { "0", UINT64_MAX, 1, 0 },
    { "4096", UINT64_MAX, 1, 4096 },
    { "4K", UINT64_MAX, 1, 4096 },
    { "512M", UINT64_MAX, 1, (uint64_t)512 << 20 },
    { "2G", UINT64_MAX, 1, (uint64_t)2 << 30 },
    { "3T", UINT64_MAX, 1, (uint64_t)3 << 40 },
    { "2^20K", UINT64_MAX, 1, (uint64_t)1 << 30 },
    { "17179869183G", UINT64_MAX, 1, UINT64_MAX >> 30 << 30 }, /* 2^64 - 2^30 */
    { "17179869184G", UINT64_MAX, 0, 0 },                      /* 2^64 */
    { "K", UINT64_MAX, 0, 0 },
    { "1.5G", UINT64_MAX, 0, 0 },
    { "12Q", UINT64_MAX, 0, 0 },
    { "5m", UINT64_MAX, 0, 0 },
    { "5 M", UINT64_MAX, 0, 0 },
    { "5MB", UINT64_MAX, 0, 0 },
    { "-1M", UINT64_MAX, 0, 0 },
    { "", UINT64_MAX, 0, 0 },
};
#define N_BYTES (sizeof bytes_cases / sizeof bytes_cases[0])

ParameterizedTestParameters(cli_arguments, parse_bytes)
{
    static int idx[N_BYTES];
    for (size_t i = 0; i < N_BYTES; i++) idx[i] = (int)i;
    return cr_make_param_array(int, idx, N_BYTES);
}

ParameterizedTest(int *i, cli_arguments, parse_bytes)
{
    const count_case *c = &bytes_cases[*i];
    uint64_t got = UNWRITTEN;
    const int rc = tool_parse_bytes(c->text, &got);
    expect_parsed(c, rc, got);
}

typedef struct {
    const char *text;
    int ok;
    double value;
} real_case;

static const real_case real_cases[] = {
    { "3", 1, 3 },           { "-0.5", 1, -0.5 },  { "+2.5", 1, 2.5 }, { ".5", 1, 0.5 }, { "5.", 1, 5 },
    { "1e-300", 1, 1e-300 }, { "-1E3", 1, -1000 }, { "", 0, 0 },       { " 1", 0, 0 },   { "1 ", 0, 0 },
    { "0x10", 0, 0 },        { "nan", 0, 0 },      { "inf", 0, 0 },    { "-inf", 0, 0 }, { "1e400", 0, 0 },
    { "-", 0, 0 },           { ".", 0, 0 },        { "e5", 0, 0 },     { "1e", 0, 0 },   { "1.2.3", 0, 0 },
    { "3abc", 0, 0 },
};
#define N_REAL (sizeof real_cases / sizeof real_cases[0])

ParameterizedTestParameters(cli_arguments, parse_real)
{
    static int idx[N_REAL];
    for (size_t i = 0; i < N_REAL; i++) idx[i] = (int)i;
    return cr_make_param_array(int, idx, N_REAL);
}

ParameterizedTest(int *i, cli_arguments, parse_real)
{
    const real_case *c = &real_cases[*i];
    double got = 12345.0;
    const int rc = tool_parse_real(c->text, &got);
    if (!c->ok) {
        cr_assert_eq(rc, -1, "'%s' was accepted as %g", c->text, got);
        cr_assert_eq(got, 12345.0, "'%s': a refused value wrote the output", c->text);
        return;
    }
    cr_assert_eq(rc, 0, "'%s' was refused", c->text);
    cr_assert_eq(got, c->value, "'%s': %.17g, wanted %.17g", c->text, got, c->value);
}

/* ================================================================================================================
 * The commands
 * ================================================================================================================ */

typedef struct {
    const char *name;
    const char *argv[14]; /* after "gpuws"; NULL-terminated */
    int exit_code;
    const char *output; /* must appear in stdout + stderr */
} cli_case;

/* img.fits is a 16 x 12 f32 image, k.fits a 3 x 3 kernel: rows that must fail name them so that, on code that
 * accepted the fault, the command would have run (and written) instead. */
static const cli_case cli_cases[] = {
    /* primes */
    { "primes_repeat_1e30",
      { "primes", "100", "--repeat", "1e30" },
      2,
      "--repeat needs a whole number from 1 to 1000000, not '1e30'" },
    { "primes_repeat_with_trailing_letters",
      { "primes", "100", "--repeat", "3abc" },
      2,
      "--repeat needs a whole number from 1 to 1000000, not '3abc'" },
    { "primes_repeat_past_the_bound",
      { "primes", "100", "--repeat", "1000001" },
      2,
      "--repeat needs a whole number from 1 to 1000000" },
    { "primes_n_with_a_leading_space", { "primes", " 5" }, 2, "N = ' 5' is not a whole number from 0 to 2^31" },
    { "primes_n_with_a_trailing_space", { "primes", "5 " }, 2, "N = '5 ' is not a whole number from 0 to 2^31" },
    { "primes_n_in_hex", { "primes", "0x10" }, 2, "N = '0x10' is not a whole number" },
    { "primes_negative_n", { "primes", "-1" }, 2, "N = '-1' is not a whole number from 0 to 2^31" },
    { "primes_empty_n", { "primes", "" }, 2, "N = '' is not a whole number from 0 to 2^31" },
    { "primes_variant_twice",
      { "primes", "100", "--variant", "fast", "--variant", "trial" },
      2,
      "--variant given twice" },
    { "primes_count_only_twice", { "primes", "100", "--count-only", "--count-only" }, 2, "--count-only given twice" },
    { "primes_variant_without_a_value", { "primes", "100", "--variant" }, 2, "--variant needs a value: fast or trial" },
    /* pi */
    { "pi_negative_seed",
      { "pi", "1000", "--seed", "-1" },
      2,
      "--seed needs a whole number from 0 to 2^64 - 1, not '-1'" },
    { "pi_seed_with_a_trailing_space",
      { "pi", "1000", "--seed", "7 " },
      2,
      "--seed needs a whole number from 0 to 2^64 - 1, not '7 '" },
    { "pi_seed_twice", { "pi", "1000", "--seed", "1", "--seed", "2" }, 2, "--seed given twice" },
    { "pi_repeat_1e30",
      { "pi", "1000", "--repeat", "1e30" },
      2,
      "--repeat needs a whole number from 1 to 1000000, not '1e30'" },
    { "pi_negative_n", { "pi", "-5" }, 2, "N = '-5' is not a whole number of samples from 1 to 2^64 - 1" },
    { "pi_empty_n", { "pi", "" }, 2, "N = '' is not a whole number of samples" },
    /* matmul */
    { "matmul_repeat_2_to_the_31_minus_1",
      { "matmul", "2", "2", "2", "--repeat", "2147483647" },
      2,
      "--repeat needs a whole number from 1 to 1000000, not '2147483647'" },
    { "matmul_repeat_with_trailing_letters",
      { "matmul", "2", "2", "2", "--repeat", "3abc" },
      2,
      "--repeat needs a whole number from 1 to 1000000" },
    { "matmul_negative_size", { "matmul", "4", "-4", "4" }, 2, "N = '-4' is not a whole number" },
    { "matmul_size_with_a_leading_space", { "matmul", " 4", "4", "4" }, 2, "M = ' 4' is not a whole number" },
    { "matmul_negative_seed",
      { "matmul", "2", "2", "2", "--seed", "-3" },
      2,
      "--seed needs a whole number from 0 to 2^64 - 1, not '-3'" },
    { "matmul_dtype_twice", { "matmul", "2", "2", "2", "--dtype", "f32", "--dtype", "f64" }, 2, "--dtype given twice" },
    { "matmul_variant_without_a_value",
      { "matmul", "2", "2", "2", "--variant" },
      2,
      "--variant needs a value: tiled, naive or shared" },
    /* convolve */
    { "convolve_empty_output_name",
      { "convolve", "img.fits", "k.fits", "-o", "" },
      2,
      "-o needs a file name, not an empty string" },
    { "convolve_empty_input_name",
      { "convolve", "", "k.fits", "-o", "out.fits" },
      2,
      "an empty file name ('') where IN.fits was expected" },
    { "convolve_mode_twice",
      { "convolve", "img.fits", "k.fits", "-o", "out.fits", "--mode", "full", "--mode", "same" },
      2,
      "--mode given twice" },
    { "convolve_output_twice_under_two_names",
      { "convolve", "img.fits", "k.fits", "-o", "a.fits", "--output", "b.fits" },
      2,
      "--output given twice" },
    { "convolve_size_with_files",
      { "convolve", "img.fits", "k.fits", "-o", "out.fits", "--size", "64" },
      2,
      "--size applies to --demo only" },
    { "convolve_repeat_with_files",
      { "convolve", "img.fits", "k.fits", "-o", "out.fits", "--repeat", "3" },
      2,
      "--repeat applies to --demo only" },
    { "convolve_mode_with_the_demo",
      { "convolve", "--demo", "--size", "16", "--repeat", "1", "--mode", "same" },
      2,
      "--mode applies to files only" },
    { "convolve_fill_in_hex",
      { "convolve", "img.fits", "k.fits", "-o", "out.fits", "--fill", "0x10" },
      2,
      "--fill needs a number, not '0x10'" },
    { "convolve_fill_with_a_leading_space",
      { "convolve", "img.fits", "k.fits", "-o", "out.fits", "--fill", " 1" },
      2,
      "--fill needs a number, not ' 1'" },
    { "convolve_repeat_1e30",
      { "convolve", "--demo", "--size", "16", "--repeat", "1e30" },
      2,
      "--repeat needs a count from 1 to 1000000, not '1e30'" },
    { "convolve_max_device_memory_with_an_unknown_unit",
      { "convolve", "img.fits", "k.fits", "-o", "out.fits", "--max-device-memory", "12Q" },
      2,
      "--max-device-memory needs a size in bytes (512M, 2G, 1048576), not '12Q'" },
    { "convolve_max_device_memory_past_2_to_the_64",
      { "convolve", "img.fits", "k.fits", "-o", "out.fits", "--max-device-memory", "17179869184G" },
      2,
      "--max-device-memory needs a size in bytes" },
    { "convolve_max_device_memory_twice",
      { "convolve", "img.fits", "k.fits", "-o", "out.fits", "--max-device-memory", "1G", "--max-device-memory", "2G" },
      2,
      "--max-device-memory given twice" },
    { "convolve_max_device_memory_with_the_demo",
      { "convolve", "--demo", "--size", "16", "--repeat", "1", "--max-device-memory", "1G" },
      2,
      "--max-device-memory applies to files only" },
    /* sources */
    { "sources_size_with_an_image", { "sources", "img.fits", "--size", "64" }, 2, "--size applies to --demo only" },
    { "sources_seed_with_an_image", { "sources", "img.fits", "--seed", "3" }, 2, "--seed applies to --demo only" },
    { "sources_sources_with_an_image",
      { "sources", "img.fits", "--sources", "5" },
      2,
      "--sources applies to --demo only" },
    { "sources_negative_seed",
      { "sources", "--demo", "--size", "64", "--seed", "-1" },
      2,
      "--seed needs a whole number from 0 to 2^64 - 1, not '-1'" },
    { "sources_kappa_twice",
      { "sources", "--demo", "--size", "64", "--kappa", "3", "--kappa", "4" },
      2,
      "--kappa given twice" },
    { "sources_kappa_with_a_leading_space",
      { "sources", "--demo", "--size", "64", "--kappa", " 3" },
      2,
      "--kappa needs a number, not ' 3'" },
    { "sources_threshold_in_hex",
      { "sources", "--demo", "--size", "64", "--threshold", "0x5" },
      2,
      "--threshold needs a number, not '0x5'" },
    { "sources_empty_catalog_name",
      { "sources", "--demo", "--size", "64", "--catalog", "" },
      2,
      "--catalog needs a file name, not an empty string" },
    { "sources_empty_image_name", { "sources", "" }, 2, "the IMAGE file name is empty" },
    { "sources_unknown_method",
      { "sources", "img.fits", "--method", "sep" },
      2,
      "--method must be extract or workshop" },
    { "sources_method_twice",
      { "sources", "img.fits", "--method", "extract", "--method", "workshop" },
      2,
      "--method given twice" },
    { "sources_kappa_with_extract",
      { "sources", "img.fits", "--method", "extract", "--kappa", "3" },
      2,
      "--kappa applies to --method workshop only" },
    { "sources_threshold_with_extract",
      { "sources", "img.fits", "--method", "extract", "--threshold", "5" },
      2,
      "--threshold applies to --method workshop only" },
    { "sources_threshold_abs_with_extract",
      { "sources", "img.fits", "--threshold-abs", "0.1", "--method", "extract" },
      2,
      "--threshold-abs applies to --method workshop only" },
    { "sources_demo_with_extract",
      { "sources", "--demo", "--method", "extract" },
      2,
      "--demo applies to --method workshop only" },
    { "sources_back_size_with_workshop",
      { "sources", "img.fits", "--method", "workshop", "--back-size", "32" },
      2,
      "--back-size applies to --method extract only" },
    { "sources_minarea_with_workshop",
      { "sources", "img.fits", "--method", "workshop", "--minarea", "3" },
      2,
      "--minarea applies to --method extract only" },
    { "sources_no_clean_with_workshop",
      { "sources", "img.fits", "--method", "workshop", "--no-clean" },
      2,
      "--no-clean applies to --method extract only" },
    { "sources_background_map_with_workshop",
      { "sources", "img.fits", "--method", "workshop", "--background", "b.fits" },
      2,
      "--background applies to --method extract only" },
    { "sources_rms_map_with_the_demo",
      { "sources", "--demo", "--rms", "r.fits" },
      2,
      "--rms applies to --method extract only" },
    { "sources_back_size_zero",
      { "sources", "img.fits", "--method", "extract", "--back-size", "0" },
      2,
      "--back-size needs N or W,H, whole numbers from 1 to 2147483647, not '0'" },
    { "sources_back_size_negative",
      { "sources", "img.fits", "--method", "extract", "--back-size", "-64" },
      2,
      "--back-size needs N or W,H, whole numbers from 1 to 2147483647, not '-64'" },
    { "sources_back_size_three_values",
      { "sources", "img.fits", "--method", "extract", "--back-size", "64,64,1" },
      2,
      "--back-size needs N or W,H" },
    { "sources_back_size_missing_height",
      { "sources", "img.fits", "--method", "extract", "--back-size", "64," },
      2,
      "--back-size needs N or W,H" },
    { "sources_back_filtersize_too_large",
      { "sources", "img.fits", "--method", "extract", "--back-filtersize", "3,2000" },
      2,
      "--back-filtersize needs N or W,H, whole numbers from 1 to 1001, not '3,2000'" },
    { "sources_detect_thresh_zero",
      { "sources", "img.fits", "--method", "extract", "--detect-thresh", "0" },
      2,
      "--detect-thresh must be > 0 (sigmas), not '0'" },
    { "sources_detect_thresh_nan",
      { "sources", "img.fits", "--method", "extract", "--detect-thresh", "nan" },
      2,
      "--detect-thresh needs a number, not 'nan'" },
    { "sources_minarea_zero",
      { "sources", "img.fits", "--method", "extract", "--minarea", "0" },
      2,
      "--minarea needs a pixel count from 1 to 2147483647, not '0'" },
    { "sources_filter_empty",
      { "sources", "img.fits", "--method", "extract", "--filter", "" },
      2,
      "--filter needs default, none, gauss:FWHM or a .conv file" },
    { "sources_filter_gauss_zero",
      { "sources", "img.fits", "--method", "extract", "--filter", "gauss:0" },
      2,
      "--filter gauss:FWHM needs a FWHM in pixels above 0 and at most 30, not '0'" },
    { "sources_filter_gauss_no_number",
      { "sources", "img.fits", "--method", "extract", "--filter", "gauss:" },
      2,
      "--filter gauss:FWHM needs a FWHM" },
    { "sources_filter_missing_file",
      { "sources", "img.fits", "--method", "extract", "--filter", "none.conv" },
      2,
      "--filter none.conv: cannot read" },
    { "sources_filter_a_fits_file",
      { "sources", "img.fits", "--method", "extract", "--filter", "k.fits" },
      2,
      "--filter k.fits is not a SExtractor convolution kernel: the first line is not CONV NORM or CONV NONORM" },
    { "sources_deblend_nthresh_zero",
      { "sources", "img.fits", "--method", "extract", "--deblend-nthresh", "0" },
      2,
      "--deblend-nthresh needs a count from 1 to 1024, not '0'" },
    { "sources_deblend_mincont_above_one",
      { "sources", "img.fits", "--method", "extract", "--deblend-mincont", "1.5" },
      2,
      "--deblend-mincont must be from 0 to 1, not '1.5'" },
    { "sources_deblend_mincont_negative",
      { "sources", "img.fits", "--method", "extract", "--deblend-mincont", "-0.1" },
      2,
      "--deblend-mincont must be from 0 to 1, not '-0.1'" },
    { "sources_clean_param_zero",
      { "sources", "img.fits", "--method", "extract", "--clean-param", "0" },
      2,
      "--clean-param must be > 0, not '0'" },
    { "sources_clean_param_and_no_clean",
      { "sources", "img.fits", "--method", "extract", "--clean-param", "2", "--no-clean" },
      2,
      "--clean-param and --no-clean exclude each other" },
    { "sources_phot_apertures_zero",
      { "sources", "img.fits", "--phot-apertures", "3,0" },
      2,
      "--phot-apertures: diameter 2 is 0: a diameter must be > 0 pixels" },
    { "sources_phot_apertures_negative",
      { "sources", "img.fits", "--phot-apertures", "-3" },
      2,
      "--phot-apertures: diameter 1 is -3: a diameter must be > 0 pixels" },
    { "sources_phot_apertures_not_a_number",
      { "sources", "img.fits", "--phot-apertures", "3,6px" },
      2,
      "--phot-apertures: diameter 2, '6px', is not a number" },
    { "sources_phot_apertures_nan",
      { "sources", "img.fits", "--phot-apertures", "nan" },
      2,
      "--phot-apertures: diameter 1, 'nan', is not a number" },
    { "sources_phot_apertures_empty_list",
      { "sources", "img.fits", "--phot-apertures", "" },
      2,
      "--phot-apertures needs diameters in pixels, D[,D...]" },
    { "sources_phot_apertures_missing_value",
      { "sources", "img.fits", "--phot-apertures" },
      2,
      "--phot-apertures needs diameters in pixels, D[,D...]" },
    { "sources_phot_apertures_empty_item",
      { "sources", "img.fits", "--phot-apertures", "3,,6" },
      2,
      "--phot-apertures: diameter 2 is empty in '3,,6'" },
    { "sources_phot_apertures_trailing_comma",
      { "sources", "img.fits", "--phot-apertures", "3," },
      2,
      "--phot-apertures: diameter 2 is empty in '3,'" },
    { "sources_phot_apertures_too_many",
      { "sources", "img.fits", "--phot-apertures",
        "1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31,32,33" },
      2,
      "--phot-apertures: 33 diameters, at most 32 (SExtractor's limit)" },
    { "sources_phot_apertures_same_diameter",
      { "sources", "img.fits", "--phot-apertures", "3,6,3.0", "--catalog", "c.csv", "--fits-catalog", "c.fits" },
      2,
      "--phot-apertures: diameters 1 and 3 (3, 3.0) both give the columns flux_aper_3, fluxerr_aper_3, flag_aper_3: "
      "they agree in 9 significant digits" },
    { "sources_phot_apertures_same_name",
      { "sources", "img.fits", "--phot-apertures", "2.5,2.5000000001", "--catalog", "c.csv", "--fits-catalog",
        "c.fits" },
      2,
      "--phot-apertures: diameters 1 and 2 (2.5, 2.5000000001) both give the columns flux_aper_2p5," },
    { "sources_phot_apertures_with_workshop",
      { "sources", "img.fits", "--method", "workshop", "--phot-apertures", "3" },
      2,
      "--phot-apertures applies to --method extract only" },
    { "sources_phot_apertures_twice",
      { "sources", "img.fits", "--phot-apertures", "3", "--phot-apertures", "6" },
      2,
      "--phot-apertures given twice" },
    { "sources_connectivity_6_with_extract",
      { "sources", "img.fits", "--method", "extract", "--connectivity", "6" },
      2,
      "--connectivity is 4 or 8" },
    { "sources_hdu_zero",
      { "sources", "img.fits", "--hdu", "0" },
      2,
      "--hdu needs an HDU number from 1 to 100000, not '0'" },
    { "sources_plane_negative", { "sources", "img.fits", "--plane", "-1" }, 2, "--plane needs a plane index from 0" },
    { "sources_plane_with_the_demo", { "sources", "--demo", "--plane", "1" }, 2, "--plane applies to an IMAGE only" },
    { "sources_hdu_with_the_demo", { "sources", "--demo", "--hdu", "2" }, 2, "--hdu applies to an IMAGE only" },
    { "sources_empty_regions_name",
      { "sources", "img.fits", "--regions", "" },
      2,
      "--regions needs a file name, not an empty string" },
    { "sources_regions_is_the_image", { "sources", "img.fits", "--regions", "img.fits" }, 2, "is the input img.fits" },
    { "sources_two_images_without_outdir", { "sources", "img.fits", "k.fits" }, 2, "2 images: give --outdir DIR" },
    { "sources_write_without_outdir",
      { "sources", "img.fits", "--write", "labels" },
      2,
      "--write applies to --outdir only" },
    { "sources_catalog_with_outdir",
      { "sources", "img.fits", "--outdir", ".", "--catalog", "c.csv" },
      2,
      "--catalog names one file; with --outdir choose the outputs with --write" },
    { "sources_write_naming_no_output",
      { "sources", "img.fits", "--outdir", ".", "--write", "catalog,bogus" },
      2,
      "--write: 'bogus' is not an output" },
    { "sources_write_rms_with_workshop",
      { "sources", "img.fits", "--outdir", ".", "--write", "rms", "--method", "workshop" },
      2,
      "--write background/rms applies to --method extract only" },
    { "sources_missing_list",
      { "sources", "@absent.txt", "--outdir", "." },
      2,
      "@absent.txt: cannot read the list of images" },
    { "sources_empty_list_name", { "sources", "@", "--outdir", "." }, 2, "@: cannot read the list of images: no name" },
    { "sources_two_images_of_one_name",
      { "sources", "img.fits", "./img.fits", "--outdir", "." },
      2,
      "two images are named img: their outputs would be the same files" },
    { "sources_outdir_with_the_demo",
      { "sources", "--demo", "--outdir", "." },
      2,
      "--outdir applies to an IMAGE only" },
    { "sources_fits_catalog_is_the_catalog",
      { "sources", "img.fits", "--catalog", "c", "--fits-catalog", "./c" },
      2,
      "are the same file" },
    /* bench (--list ends the run right after the options are parsed: on code that accepted the fault it exits 0) */
    { "bench_repeat_twice", { "bench", "--list", "--repeat", "3", "--repeat", "4" }, 2, "--repeat given twice" },
    { "bench_repeat_1e30",
      { "bench", "--list", "--repeat", "1e30" },
      2,
      "--repeat needs a positive count from 1 to 1000000, not '1e30'" },
    { "bench_empty_json_name",
      { "bench", "--list", "--json", "" },
      2,
      "--json needs a file name, not an empty string" },
    { "bench_empty_platform",
      { "bench", "--list", "--platform", "" },
      2,
      "--platform needs a platform name, not an empty string" },
    { "bench_infinite_budget",
      { "bench", "--list", "--budget", "1e999" },
      2,
      "--budget needs a positive number of seconds, at most 86400" },
    { "bench_budget_in_hex",
      { "bench", "--list", "--budget", "0x10" },
      2,
      "--budget needs a positive number of seconds" },
    { "bench_back_to_back_with_a_leading_space",
      { "bench", "--list", "--back-to-back", " 5" },
      2,
      "--back-to-back needs 0 (off) or a count" },
    { "bench_algorithms_naming_nothing",
      { "bench", "--backends", "cpu", "--algorithms", "," },
      2,
      "--algorithms names no algorithm" },
    { "bench_full_twice", { "bench", "--list", "--full", "--full" }, 2, "--full given twice" },
    /* bench merge (img.fits is no bench report: a merge that got past its arguments would exit 1) */
    { "bench_merge_json_twice",
      { "bench", "merge", "img.fits", "--json", "a.json", "--json", "b.json" },
      2,
      "--json given twice" },
    { "bench_merge_without_a_run", { "bench", "merge", "--svg", "v.svg" }, 2, "no run named" },
    { "bench_merge_empty_svg_name",
      { "bench", "merge", "img.fits", "--svg", "" },
      2,
      "--svg needs a file name, not an empty string" },
    { "bench_merge_csv",
      { "bench", "merge", "img.fits", "--csv", "c.csv" },
      2,
      "unknown or incomplete option '--csv'" },
    /* selftest */
    { "selftest_unknown_size",
      { "selftest", "--backends", "cpu", "--algorithms", "vector_add", "--sizes", "huge" },
      2,
      "unknown size 'huge' in --sizes" },
    { "selftest_empty_backends",
      { "selftest", "--backends", "", "--algorithms", "vector_add" },
      2,
      "--backends needs a comma list, not an empty string" },
    { "selftest_sizes_twice",
      { "selftest", "--backends", "cpu", "--algorithms", "vector_add", "--sizes", "small", "--sizes", "small" },
      2,
      "--sizes given twice" },
    /* tuning */
    { "tuning_unknown_option", { "tuning", "--json" }, 2, "gpuws tuning: unexpected argument '--json'" },
    { "tuning_markdown_twice", { "tuning", "--markdown", "--markdown" }, 2, "gpuws tuning: --markdown given twice" },
};
#define N_CLI (sizeof cli_cases / sizeof cli_cases[0])

static char dir[256];

static void write_fixtures(void)
{
    cr_assert(getenv("GPUWS_CLI") && *getenv("GPUWS_CLI"), "GPUWS_CLI is not set (ctest sets it to the built gpuws)");
    if (!fits_available()) cr_skip_test("gpuws was built without cfitsio");
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/gpuws-cli-arguments-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    cr_assert_not_null(mkdtemp(dir));
    float img[16 * 12], k[9] = { 0, 1, 0, 1, 4, 1, 0, 1, 0 };
    test_fill_uniform_f32(img, 16 * 12, 5, -1, 1);
    char path[400], err[512];
    snprintf(path, sizeof path, "%s/img.fits", dir);
    cr_assert_eq(fits_write_image(path, FITS_F32, img, 16, 12, err, sizeof err), 0, "%s", err);
    snprintf(path, sizeof path, "%s/k.fits", dir);
    cr_assert_eq(fits_write_image(path, FITS_F32, k, 3, 3, err, sizeof err), 0, "%s", err);
}

static void remove_fixtures(void)
{
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (dir[0]) cr_assert_eq(system(cmd), 0);
}

/* Entries of dir other than the two fixtures. */
static int strays(void)
{
    DIR *d = opendir(dir);
    cr_assert_not_null(d);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") && strcmp(e->d_name, "img.fits") &&
            strcmp(e->d_name, "k.fits")) {
            cr_log_error("left behind: %s", e->d_name);
            n++;
        }
    closedir(d);
    return n;
}

ParameterizedTestParameters(cli_arguments, command)
{
    static int idx[N_CLI];
    for (size_t i = 0; i < N_CLI; i++) idx[i] = (int)i;
    return cr_make_param_array(int, idx, N_CLI);
}

ParameterizedTest(int *i, cli_arguments, command, .init = write_fixtures, .fini = remove_fixtures, .timeout = 120)
{
    const cli_case *c = &cli_cases[*i];
    static const char *const env[] = { "GPUWS_BACKEND=cpu", NULL };
    char *out;
    /* 60 s: a case the CLI wrongly accepted may start a run of 2^31 repeats */
    const int code = test_run_cli_in(dir, 60, c->argv, env, &out);
    cr_assert_eq(code, c->exit_code, "%s: exit %d, wanted %d; output:\n%s", c->name, code, c->exit_code, out);
    cr_assert(strstr(out, c->output), "%s: output lacks '%s':\n%s", c->name, c->output, out);
    /* a usage error stops before any work: one line of message, then nothing or the usage */
    const char *rest = strchr(out, '\n');
    cr_assert(!strncmp(out, "gpuws ", 6) && rest && (!rest[1] || !strncmp(rest + 1, "usage: gpuws ", 13)),
              "%s: more than the message and the usage:\n%s", c->name, out);
    cr_assert_eq(strays(), 0, "%s: a refused command left files behind", c->name);
    free(out);
}
