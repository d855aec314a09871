/* World coordinates through wcslib: see sky_wcs.h. */
#include "sky_wcs.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef GPUWS_HAVE_WCSLIB
#include <ctype.h>
#include <wcs.h>
#include <wcsfix.h>
#include <wcshdr.h>
#include <wcsutil.h>

struct sky_wcs {
    struct wcsprm wcs;
    int naxis;           /* the image's NAXIS */
    double plane_pix[9]; /* 1-based pixel coordinates of the plane read, axes 3 and up */
    char lng_name[16], lat_name[16];
};

int sky_wcs_available(void) { return 1; }

static void lower(char *dst, size_t n, const char *src)
{
    size_t k = 0;
    for (; src[k] && src[k] != ' ' && src[k] != '-' && k + 1 < n; k++) dst[k] = (char)tolower((unsigned char)src[k]);
    dst[k] = 0;
}

sky_wcs *sky_wcs_create(const fits_image *img, char *why, size_t n)
{
    if (!img->header || img->nkeys <= 0) return snprintf(why, n, "no header was read"), NULL;
    int nreject = 0, nwcs = 0;
    struct wcsprm *all = NULL;
    char *hdr = strdup(img->header); /* wcspih takes a non-const header */
    if (!hdr) return snprintf(why, n, "out of memory"), NULL;
    int st = wcspih(hdr, img->nkeys, WCSHDR_all, 0, &nreject, &nwcs, &all);
    free(hdr);
    if (st) return snprintf(why, n, "wcslib cannot parse the header: %s", wcs_errmsg[st]), NULL;
    sky_wcs *w = calloc(1, sizeof *w);
    if (!w) return wcsvfree(&nwcs, &all), snprintf(why, n, "out of memory"), NULL;
    w->wcs.flag = -1;
    const int found = nwcs;
    st = found ? wcssub(1, &all[0], NULL, NULL, &w->wcs) : 0; /* the primary description (alternate ' ') */
    wcsvfree(&nwcs, &all);
    if (!found) return free(w), snprintf(why, n, "the header has no WCS keywords"), NULL;
    if (st) return sky_wcs_destroy(w), snprintf(why, n, "wcslib cannot copy the WCS: %s", wcs_errmsg[st]), NULL;
    int fixes[NWCSFIX];
    wcsfix(7, NULL, &w->wcs, fixes); /* non-standard forms (CROTA, DATE, units); a fix it cannot make is harmless */
    if ((st = wcsset(&w->wcs))) {
        snprintf(why, n, "wcslib rejects the WCS: %s", w->wcs.err ? w->wcs.err->msg : wcs_errmsg[st]);
        return sky_wcs_destroy(w), NULL;
    }
    int typed = 0; /* wcspih makes a linear WCS of a header with no WCS keywords at all */
    for (int i = 0; i < w->wcs.naxis; i++) typed |= w->wcs.ctype[i][0] != 0;
    if (!typed) return sky_wcs_destroy(w), snprintf(why, n, "the header has no WCS keywords"), NULL;
    if (w->wcs.lng < 0 || w->wcs.lat < 0) {
        snprintf(why, n, "the WCS has no celestial axes (CTYPE1 = '%s')", w->wcs.naxis ? w->wcs.ctype[0] : "");
        return sky_wcs_destroy(w), NULL;
    }
    w->naxis = img->naxis;
    long long plane = img->plane;
    for (int i = 2; i < 9; i++) { /* the plane's index along each axis, from NAXISi in the header */
        char key[16], *card;
        long long len = 1;
        snprintf(key, sizeof key, "NAXIS%d  ", i + 1);
        for (card = img->header; *card && strncmp(card, key, 8); card += strlen(card) >= 80 ? 80 : strlen(card)) {
        }
        if (*card) len = atoll(card + 10);
        if (len < 1) len = 1;
        w->plane_pix[i] = (double)(plane % len) + 1;
        plane /= len;
    }
    const char *t = w->wcs.lngtyp;
    if (!strcmp(t, "RA")) strcpy(w->lng_name, "ra"), strcpy(w->lat_name, "dec");
    else if (!strcmp(t, "GLON")) strcpy(w->lng_name, "glon"), strcpy(w->lat_name, "glat");
    else if (!strcmp(t, "ELON")) strcpy(w->lng_name, "elon"), strcpy(w->lat_name, "elat");
    else {
        lower(w->lng_name, sizeof w->lng_name, w->wcs.ctype[w->wcs.lng]);
        lower(w->lat_name, sizeof w->lat_name, w->wcs.ctype[w->wcs.lat]);
    }
    return w;
}

void sky_wcs_destroy(sky_wcs *w)
{
    if (!w) return;
    wcsfree(&w->wcs);
    free(w);
}

int sky_wcs_world(const sky_wcs *w, double x, double y, double *lng, double *lat)
{
    double pix[9], img[9], world[9], phi, theta;
    int stat[1] = { 0 };
    const int naxis = w->wcs.naxis < 9 ? w->wcs.naxis : 9;
    for (int i = 0; i < naxis; i++) pix[i] = i >= 2 ? w->plane_pix[i] : 1;
    pix[0] = x + 1, pix[1] = y + 1; /* FITS pixel coordinates are 1-based */
    *lng = *lat = NAN;
    if (naxis > 9 || wcsp2s((struct wcsprm *)&w->wcs, 1, naxis, pix, img, &phi, &theta, world, stat)) return -1;
    *lng = world[w->wcs.lng], *lat = world[w->wcs.lat];
    return 0;
}

const char *sky_wcs_lng_name(const sky_wcs *w) { return w->lng_name; }
const char *sky_wcs_lat_name(const sky_wcs *w) { return w->lat_name; }

const char *sky_wcs_ds9_frame(const sky_wcs *w)
{
    const char *t = w->wcs.lngtyp;
    if (!strcmp(t, "GLON")) return "galactic";
    if (!strcmp(t, "ELON")) return "ecliptic";
    if (strcmp(t, "RA")) return NULL;
    if (!strncmp(w->wcs.radesys, "ICRS", 4)) return "icrs";
    if (!strncmp(w->wcs.radesys, "FK4", 3)) return "fk4";
    return "fk5";
}

int sky_wcs_header_2d(const sky_wcs *w, char **cards, int *ncards)
{
    int axes[2] = { 1, 2 }, nsub = 2, nkey = 0;
    char *h = NULL;
    struct wcsprm sub;
    sub.flag = -1;
    *cards = NULL, *ncards = 0;
    if ((w->wcs.lng > 1 || w->wcs.lat > 1) || wcssub(1, &w->wcs, &nsub, axes, &sub)) return -1;
    int rc = wcsset(&sub) || wcshdo(WCSHDO_safe, &sub, &nkey, &h) ? -1 : 0;
    if (!rc && (*cards = malloc((size_t)nkey * 80 + 1))) {
        memcpy(*cards, h, (size_t)nkey * 80);
        (*cards)[(size_t)nkey * 80] = 0;
        *ncards = nkey;
    } else {
        rc = -1;
    }
    wcsdealloc(h);
    wcsfree(&sub);
    return rc;
}

#else

struct sky_wcs {
    int unused;
};

int sky_wcs_available(void) { return 0; }
sky_wcs *sky_wcs_create(const fits_image *img, char *why, size_t n)
{
    (void)img;
    snprintf(why, n, "gpuws was built without wcslib (Debian: wcslib-dev)");
    return NULL;
}
void sky_wcs_destroy(sky_wcs *w) { (void)w; }
int sky_wcs_world(const sky_wcs *w, double x, double y, double *lng, double *lat)
{
    (void)w, (void)x, (void)y;
    *lng = *lat = NAN;
    return -1;
}
const char *sky_wcs_lng_name(const sky_wcs *w) { return (void)w, "lng"; }
const char *sky_wcs_lat_name(const sky_wcs *w) { return (void)w, "lat"; }
const char *sky_wcs_ds9_frame(const sky_wcs *w) { return (void)w, NULL; }
int sky_wcs_header_2d(const sky_wcs *w, char **cards, int *ncards)
{
    (void)w;
    *cards = NULL, *ncards = 0;
    return -1;
}

#endif
