/* report_svg.c — a small SVG plotting helper: linear axes with nice ticks,
 * grid, markers of several shapes, polylines, text and a legend column with
 * marker entries and a colour bar. Coordinates are printed rounded to 0.1
 * pixel with "%.1f" (no locale, no negative zero), so a chart's bytes
 * depend only on its data. */
#include "asn/report.h"
#include "asn/json.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* Space the legend column takes, and the spacing of its rows (pixels). */
enum { LEGEND_ROW = 20, LEGEND_PAD = 18, TICK_LEN = 5 };

/* Fraction of the data range added on each side before the ticks are
 * chosen, so that no point sits on the frame. */
#define DATA_PAD 0.04

/* ------------------------------------------------------------- numbers */

static double nice_num(double x, int round_it)
{
    double ex = floor(log10(x)), f = x / pow(10, ex), nf;
    if (round_it)
        nf = f < 1.5 ? 1 : f < 3 ? 2 : f < 7 ? 5 : 10;
    else
        nf = f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10;
    return nf * pow(10, ex);
}

asn_ticks asn_nice_ticks(double lo, double hi, int target)
{
    asn_ticks t;
    if (!isfinite(lo) || !isfinite(hi))
        lo = 0, hi = 1;
    if (lo > hi) {
        double s = lo;
        lo = hi, hi = s;
    }
    if (hi - lo < 1e-12 * (fabs(lo) > 1 ? fabs(lo) : 1)) {
        double d = fabs(lo) > 1e-12 ? fabs(lo) * 0.1 : 1;
        lo -= d, hi += d;
    }
    if (target < 2)
        target = 2;
    t.step = nice_num((hi - lo) / (target - 1), 1);
    t.lo = floor(lo / t.step + 1e-9) * t.step;
    t.hi = ceil(hi / t.step - 1e-9) * t.step;
    int d = (int)-floor(log10(t.step) + 1e-9);
    t.decimals = d > 0 ? d : 0;
    return t;
}

/* Pixel coordinate, rounded to 0.1 and without negative zero. */
static void coord(char *buf, double v)
{
    v = round(v * 10) / 10 + 0.0;
    snprintf(buf, 32, "%.1f", v);
}

/* A tick label: v with the ticks' decimals, "0" rather than "-0". */
static void tick_label(char *buf, double v, const asn_ticks *t)
{
    if (fabs(v) < t->step * 1e-6)
        v = 0;
    snprintf(buf, 32, "%.*f", t->decimals, v);
}

/* ------------------------------------------------------------- colours */

void asn_color_scale(double t, char out[8])
{
    /* ColorBrewer RdYlBu reversed, without its pale middle (which vanishes
     * on a white page): dark blue, blue, light blue, orange, red, dark red. */
    static const unsigned char stops[][3] = {
        {0x31, 0x36, 0x95}, {0x45, 0x75, 0xb4}, {0x74, 0xad, 0xd1},
        {0xfd, 0xae, 0x61}, {0xf4, 0x6d, 0x43}, {0xa5, 0x00, 0x26},
    };
    enum { NSTOP = sizeof stops / sizeof stops[0] };
    if (!(t >= 0))
        t = 0;
    if (t > 1)
        t = 1;
    double s = t * (NSTOP - 1);
    int i = (int)s;
    if (i >= NSTOP - 1)
        i = NSTOP - 2;
    double u = s - i;
    int c[3];
    for (int k = 0; k < 3; k++)
        c[k] = (int)lround(stops[i][k] + u * (stops[i + 1][k] - stops[i][k]));
    snprintf(out, 8, "#%02x%02x%02x", c[0], c[1], c[2]);
}

const char *asn_color_category(int i)
{
    static const char *const tab10[] = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2",
                                        "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};
    if (i < 0)
        i = -i;
    return tab10[i % 10];
}

/* ---------------------------------------------------------------- text */

void asn_xml_escape(FILE *f, const char *s)
{
    for (; s && *s; s++) {
        switch (*s) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '"': fputs("&quot;", f); break;
        case '\'': fputs("&#39;", f); break;
        default:
            /* control characters are not allowed in XML 1.0 */
            if ((unsigned char)*s < 0x20 && *s != '\n' && *s != '\t')
                fputc(' ', f);
            else
                fputc(*s, f);
        }
    }
}

/* --------------------------------------------------------------- chart */

double asn_plot_px(const asn_plot *p, double x)
{
    double w = p->width - p->left - p->right;
    return p->left + (x - p->x.lo) / (p->x.hi - p->x.lo) * w;
}

double asn_plot_py(const asn_plot *p, double y)
{
    double h = p->height - p->top - p->bottom;
    return p->top + (p->y.hi - y) / (p->y.hi - p->y.lo) * h;
}

static asn_ticks padded_ticks(double lo, double hi)
{
    double pad = (hi - lo) * DATA_PAD;
    return asn_nice_ticks(lo - pad, hi + pad, 6);
}

/* Number of ticks from lo to hi (inclusive), robust to rounding. */
static int n_ticks(const asn_ticks *t)
{
    return (int)floor((t->hi - t->lo) / t->step + 0.5) + 1;
}

/* Closes the grid group, draws the plot's frame and opens the tick group. */
static void frame_and_ticks(FILE *f, double x0, double y0, double x1, double y1)
{
    char a[32], b[32], c[32], d[32];
    fprintf(f, "</g>\n");
    coord(a, x0), coord(b, y0), coord(c, x1 - x0), coord(d, y1 - y0);
    fprintf(f, "<rect class=\"frame\" x=\"%s\" y=\"%s\" width=\"%s\" height=\"%s\" fill=\"none\" stroke=\"#555555\"/>\n",
            a, b, c, d);
    fprintf(f, "<g class=\"ticks\" fill=\"#333333\">\n");
}

/* The <svg> element and its white background. */
static void svg_open(asn_plot *p, FILE *f, const char *id, const char *desc, int width, int height)
{
    snprintf(p->id, sizeof p->id, "%s", id);
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" id=\"");
    asn_xml_escape(f, id);
    fprintf(f, "\" class=\"chart\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" role=\"img\" aria-label=\"",
            width, height, width, height);
    asn_xml_escape(f, desc);
    fprintf(f, "\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\" font-size=\"12\">\n");
    fprintf(f, "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"#ffffff\"/>\n", width, height);
}

/* A decade's tick label on a log10 axis: "1", else 10 with k superscript. */
static void decade_label(FILE *f, const char *x, const char *y, int k)
{
    if (k == 0)
        fprintf(f, "<text x=\"%s\" y=\"%s\" dy=\"4\" text-anchor=\"end\">1</text>\n", x, y);
    else
        fprintf(f, "<text x=\"%s\" y=\"%s\" dy=\"4\" text-anchor=\"end\">10<tspan dy=\"-5\" "
                   "font-size=\"9\">%d</tspan></text>\n", x, y, k);
}

/* The axes of asn_plot_begin and asn_plot_begin_logy, p->x and p->y set:
 * on a log axis (logy) y's ticks are the decades p->y.lo .. p->y.hi. */
static void begin_axes(asn_plot *p, FILE *f, const char *id, const char *desc, int width, int height,
                       const char *xlabel, const char *ylabel, int logy)
{
    p->f = f;
    p->width = width, p->height = height;
    p->left = 70, p->right = 230, p->top = 20, p->bottom = 56;
    p->legend_y = p->top + 4;
    svg_open(p, f, id, desc, width, height);

    char a[32], b[32], c[32], d[32], lab[32];
    double x0 = p->left, x1 = width - p->right, y0 = p->top, y1 = height - p->bottom;
    fprintf(f, "<g class=\"grid\" stroke=\"#e3e3e3\" stroke-width=\"1\">\n");
    int nx = n_ticks(&p->x), ny = n_ticks(&p->y);
    for (int i = 0; i < nx; i++) {
        coord(a, asn_plot_px(p, p->x.lo + i * p->x.step));
        coord(b, y0), coord(c, y1);
        fprintf(f, "<line x1=\"%s\" y1=\"%s\" x2=\"%s\" y2=\"%s\"/>\n", a, b, a, c);
    }
    for (int i = 0; i < ny; i++) {
        coord(a, asn_plot_py(p, p->y.lo + i * p->y.step));
        coord(b, x0), coord(c, x1);
        fprintf(f, "<line x1=\"%s\" y1=\"%s\" x2=\"%s\" y2=\"%s\"/>\n", b, a, c, a);
    }
    frame_and_ticks(f, x0, y0, x1, y1);
    for (int i = 0; i < nx; i++) {
        double v = p->x.lo + i * p->x.step;
        coord(a, asn_plot_px(p, v)), coord(b, y1), coord(c, y1 + TICK_LEN), coord(d, y1 + TICK_LEN + 14);
        tick_label(lab, v, &p->x);
        fprintf(f, "<line x1=\"%s\" y1=\"%s\" x2=\"%s\" y2=\"%s\" stroke=\"#555555\"/>"
                   "<text x=\"%s\" y=\"%s\" text-anchor=\"middle\">%s</text>\n", a, b, a, c, a, d, lab);
    }
    for (int i = 0; i < ny; i++) {
        double v = p->y.lo + i * p->y.step;
        coord(a, asn_plot_py(p, v)), coord(b, x0), coord(c, x0 - TICK_LEN), coord(d, x0 - TICK_LEN - 3);
        fprintf(f, "<line x1=\"%s\" y1=\"%s\" x2=\"%s\" y2=\"%s\" stroke=\"#555555\"/>", b, a, c, a);
        if (logy) {
            decade_label(f, d, a, (int)lround(v));
        } else {
            tick_label(lab, v, &p->y);
            fprintf(f, "<text x=\"%s\" y=\"%s\" dy=\"4\" text-anchor=\"end\">%s</text>\n", d, a, lab);
        }
    }
    fprintf(f, "</g>\n");
    coord(a, (x0 + x1) / 2), coord(b, height - 14);
    fprintf(f, "<text class=\"axis-label\" x=\"%s\" y=\"%s\" text-anchor=\"middle\" font-size=\"13\" fill=\"#222222\">", a, b);
    asn_xml_escape(f, xlabel);
    fprintf(f, "</text>\n");
    coord(a, (y0 + y1) / 2);
    fprintf(f, "<text class=\"axis-label\" transform=\"translate(18 %s) rotate(-90)\" text-anchor=\"middle\" "
               "font-size=\"13\" fill=\"#222222\">", a);
    asn_xml_escape(f, ylabel);
    fprintf(f, "</text>\n");
}

void asn_plot_begin(asn_plot *p, FILE *f, const char *id, const char *desc, int width, int height,
                    double xlo, double xhi, const char *xlabel, double ylo, double yhi, const char *ylabel)
{
    memset(p, 0, sizeof *p);
    p->x = padded_ticks(xlo, xhi);
    p->y = padded_ticks(ylo, yhi);
    begin_axes(p, f, id, desc, width, height, xlabel, ylabel, 0);
}

void asn_plot_begin_logy(asn_plot *p, FILE *f, const char *id, const char *desc, int width, int height,
                         double xlo, double xhi, const char *xlabel, int dec_lo, int dec_hi, const char *ylabel)
{
    memset(p, 0, sizeof *p);
    if (dec_hi <= dec_lo)
        dec_hi = dec_lo + 1;
    p->x = padded_ticks(xlo, xhi);
    p->y = (asn_ticks){dec_lo, dec_hi, 1, 0};
    begin_axes(p, f, id, desc, width, height, xlabel, ylabel, 1);
}

/* The outline of a marker as an SVG element (without closing attributes). */
static void marker_shape(FILE *f, asn_marker m, double cx, double cy, double r)
{
    char a[32], b[32], c[32];
    if (m == ASN_MARK_CIRCLE) {
        coord(a, cx), coord(b, cy), coord(c, r);
        fprintf(f, "<circle cx=\"%s\" cy=\"%s\" r=\"%s\"", a, b, c);
        return;
    }
    /* the other shapes are polygons, given as unit vertices scaled by r;
     * sizes chosen so that every shape covers about the circle's area */
    double pts[24][2];
    int n = 0;
    switch (m) {
    case ASN_MARK_SQUARE: {
        static const double v[][2] = {{-.9, -.9}, {.9, -.9}, {.9, .9}, {-.9, .9}};
        memcpy(pts, v, sizeof v), n = 4;
        break;
    }
    case ASN_MARK_TRIANGLE: {
        static const double v[][2] = {{0, -1.35}, {1.2, .75}, {-1.2, .75}};
        memcpy(pts, v, sizeof v), n = 3;
        break;
    }
    case ASN_MARK_TRIANGLE_DOWN: {
        static const double v[][2] = {{0, 1.35}, {1.2, -.75}, {-1.2, -.75}};
        memcpy(pts, v, sizeof v), n = 3;
        break;
    }
    case ASN_MARK_DIAMOND: {
        static const double v[][2] = {{0, -1.3}, {1.1, 0}, {0, 1.3}, {-1.1, 0}};
        memcpy(pts, v, sizeof v), n = 4;
        break;
    }
    case ASN_MARK_PLUS:
    case ASN_MARK_CROSS: {
        static const double v[][2] = {{-.4, -1.2}, {.4, -1.2}, {.4, -.4}, {1.2, -.4}, {1.2, .4}, {.4, .4},
                                      {.4, 1.2},   {-.4, 1.2}, {-.4, .4}, {-1.2, .4}, {-1.2, -.4}, {-.4, -.4}};
        n = 12;
        for (int i = 0; i < n; i++) {
            if (m == ASN_MARK_PLUS) {
                pts[i][0] = v[i][0], pts[i][1] = v[i][1];
            } else { /* rotated by 45 degrees */
                double k = sqrt(0.5);
                pts[i][0] = k * (v[i][0] - v[i][1]), pts[i][1] = k * (v[i][0] + v[i][1]);
            }
        }
        break;
    }
    case ASN_MARK_HEXAGON:
        n = 6;
        for (int i = 0; i < n; i++)
            pts[i][0] = 1.05 * cos(M_PI / 3 * i), pts[i][1] = 1.05 * sin(M_PI / 3 * i);
        break;
    default: /* star */
        n = 10;
        for (int i = 0; i < n; i++) {
            double rr = i % 2 ? 0.7 : 1.7, ang = -M_PI / 2 + M_PI / 5 * i;
            pts[i][0] = rr * cos(ang), pts[i][1] = rr * sin(ang);
        }
        break;
    }
    fprintf(f, "<path d=\"");
    for (int i = 0; i < n; i++) {
        coord(a, cx + r * pts[i][0]), coord(b, cy + r * pts[i][1]);
        fprintf(f, "%s%s %s", i ? " L" : "M", a, b);
    }
    fprintf(f, " Z\"");
}

void asn_plot_marker(asn_plot *p, double x, double y, asn_marker m, double r, const char *fill,
                     const char *stroke, const char *cls, const char *title)
{
    marker_shape(p->f, m, asn_plot_px(p, x), asn_plot_py(p, y), r);
    fprintf(p->f, " fill=\"%s\" stroke=\"%s\" stroke-width=\"1.2\"", fill, stroke);
    if (cls) {
        fprintf(p->f, " class=\"");
        asn_xml_escape(p->f, cls);
        fprintf(p->f, "\"");
    }
    if (title) {
        fprintf(p->f, "><title>");
        asn_xml_escape(p->f, title);
        fprintf(p->f, "</title>%s\n", m == ASN_MARK_CIRCLE ? "</circle>" : "</path>");
    } else {
        fprintf(p->f, "/>\n");
    }
}

void asn_plot_polyline(asn_plot *p, int n, const double *xs, const double *ys, const char *color,
                       double width, const char *dash, const char *cls)
{
    char a[32], b[32];
    fprintf(p->f, "<polyline points=\"");
    for (int i = 0; i < n; i++) {
        coord(a, asn_plot_px(p, xs[i])), coord(b, asn_plot_py(p, ys[i]));
        fprintf(p->f, "%s%s,%s", i ? " " : "", a, b);
    }
    coord(a, width);
    fprintf(p->f, "\" fill=\"none\" stroke=\"%s\" stroke-width=\"%s\" stroke-linejoin=\"round\"", color, a);
    if (dash)
        fprintf(p->f, " stroke-dasharray=\"%s\"", dash);
    if (cls) {
        fprintf(p->f, " class=\"");
        asn_xml_escape(p->f, cls);
        fprintf(p->f, "\"");
    }
    fprintf(p->f, "/>\n");
}

void asn_plot_hline(asn_plot *p, double y, const char *color, const char *dash, const char *label)
{
    char a[32], b[32], c[32], d[32];
    coord(a, p->left), coord(b, asn_plot_py(p, y)), coord(c, p->width - p->right);
    fprintf(p->f, "<line class=\"hline\" x1=\"%s\" y1=\"%s\" x2=\"%s\" y2=\"%s\" stroke=\"%s\" stroke-width=\"1.5\"",
            a, b, c, b, color);
    if (dash)
        fprintf(p->f, " stroke-dasharray=\"%s\"", dash);
    fprintf(p->f, "/>\n");
    if (label) {
        coord(d, p->width - p->right - 4);
        fprintf(p->f, "<text x=\"%s\" y=\"%s\" dy=\"-4\" text-anchor=\"end\" fill=\"%s\">", d, b, color);
        asn_xml_escape(p->f, label);
        fprintf(p->f, "</text>\n");
    }
}

void asn_plot_text(asn_plot *p, double x, double y, double dx, double dy, const char *anchor, const char *text,
                   const char *cls)
{
    char a[32], b[32];
    coord(a, asn_plot_px(p, x) + dx), coord(b, asn_plot_py(p, y) + dy);
    fprintf(p->f, "<text x=\"%s\" y=\"%s\" text-anchor=\"%s\"", a, b, anchor);
    if (cls) {
        fprintf(p->f, " class=\"");
        asn_xml_escape(p->f, cls);
        fprintf(p->f, "\"");
    }
    fprintf(p->f, " fill=\"#111111\" paint-order=\"stroke\" stroke=\"#ffffff\" stroke-width=\"3\">");
    asn_xml_escape(p->f, text);
    fprintf(p->f, "</text>\n");
}

/* ------------------------------------------------------------- legend */

static int legend_x(const asn_plot *p) { return p->width - p->right + LEGEND_PAD; }

void asn_plot_legend_title(asn_plot *p, const char *text)
{
    if (p->legend_y > p->top + 4)
        p->legend_y += 8;
    fprintf(p->f, "<text class=\"legend-title\" x=\"%d\" y=\"%d\" font-weight=\"bold\" fill=\"#222222\">",
            legend_x(p), p->legend_y + 10);
    asn_xml_escape(p->f, text);
    fprintf(p->f, "</text>\n");
    p->legend_y += LEGEND_ROW;
}

void asn_plot_legend_marker(asn_plot *p, asn_marker m, const char *fill, const char *stroke,
                            const char *line_color, const char *text)
{
    int x = legend_x(p), cy = p->legend_y + 6;
    fprintf(p->f, "<g class=\"legend-entry\">");
    if (line_color)
        fprintf(p->f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"%s\" stroke-width=\"2\"/>", x,
                cy, x + 24, cy, line_color);
    marker_shape(p->f, m, x + 12, cy, m == ASN_MARK_STAR ? 5 : 5.5);
    fprintf(p->f, " fill=\"%s\" stroke=\"%s\" stroke-width=\"1.2\"/>", fill, stroke);
    fprintf(p->f, "<text x=\"%d\" y=\"%d\" fill=\"#222222\">", x + 32, cy + 4);
    asn_xml_escape(p->f, text);
    fprintf(p->f, "</text></g>\n");
    p->legend_y += LEGEND_ROW;
}

void asn_plot_legend_colorbar(asn_plot *p, double lo, double hi, int height, const double *marks, int nmarks)
{
    int x = legend_x(p), y = p->legend_y, w = 16;
    int g = p->gradients++;
    /* hot at the top, as the scale is read */
    fprintf(p->f, "<defs><linearGradient id=\"%s-grad%d\" x1=\"0\" y1=\"1\" x2=\"0\" y2=\"0\">", p->id, g);
    for (int i = 0; i <= 10; i++) {
        char col[8];
        asn_color_scale(i / 10.0, col);
        fprintf(p->f, "<stop offset=\"%d%%\" stop-color=\"%s\"/>", i * 10, col);
    }
    fprintf(p->f, "</linearGradient></defs>\n");
    fprintf(p->f, "<rect class=\"colorbar\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"url(#%s-grad%d)\" "
                  "stroke=\"#555555\"/>\n", x, y, w, height, p->id, g);
    asn_ticks t = asn_nice_ticks(lo, hi, 5);
    int n = marks ? nmarks : n_ticks(&t);
    double last = INFINITY; /* pixel row of the last label, to keep them apart */
    for (int i = 0; i < n; i++) {
        double v = marks ? marks[i] : t.lo + i * t.step;
        if (v < lo - t.step * 1e-6 || v > hi + t.step * 1e-6)
            continue;
        char lab[32], a[32];
        double frac = hi > lo ? (v - lo) / (hi - lo) : 0.5, py = y + height - frac * height;
        if (fabs(py - last) < 12)
            continue;
        last = py;
        coord(a, py);
        if (marks)
            asn_fmt_double(lab, v);
        else
            tick_label(lab, v, &t);
        fprintf(p->f, "<line x1=\"%d\" y1=\"%s\" x2=\"%d\" y2=\"%s\" stroke=\"#555555\"/>"
                      "<text x=\"%d\" y=\"%s\" dy=\"4\" fill=\"#333333\">%s</text>\n",
                x + w, a, x + w + 4, a, x + w + 7, a, lab);
    }
    p->legend_y += height + 12;
}

void asn_plot_end(asn_plot *p) { fprintf(p->f, "</svg>\n"); }

/* ---------------------------------------------------- bars on a log axis */

/* Room under the plot area for the rotated category labels, and the
 * height of a title line (pixels). */
enum { LABEL_ROOM = 120, TITLE_ROW = 18 };

void asn_plot_begin_logbars(asn_plot *p, FILE *f, const char *id, const char *desc, const char *title, int width,
                            int height, int n, const char *const *labels, int dec_lo, int dec_hi,
                            const char *ylabel)
{
    memset(p, 0, sizeof *p);
    p->f = f;
    p->width = width, p->height = height;
    int lines = 0;
    if (title && *title) {
        lines = 1;
        for (const char *c = title; *c; c++)
            lines += *c == '\n';
    }
    if (dec_hi <= dec_lo)
        dec_hi = dec_lo + 1;
    p->left = 70, p->right = 230, p->top = 20 + TITLE_ROW * lines, p->bottom = LABEL_ROOM;
    p->x = (asn_ticks){-0.5, n > 0 ? n - 0.5 : 0.5, 1, 0};
    p->y = (asn_ticks){dec_lo, dec_hi, 1, 0};
    p->legend_y = p->top + 4;
    svg_open(p, f, id, desc, width, height);

    char a[32], b[32], c[32], d[32];
    double x0 = p->left, x1 = width - p->right, y0 = p->top, y1 = height - p->bottom;
    /* the title, line by line */
    const char *t = title;
    for (int i = 0; i < lines; i++) {
        const char *nl = strchr(t, '\n');
        size_t len = nl ? (size_t)(nl - t) : strlen(t);
        char line[512];
        snprintf(line, sizeof line, "%.*s", (int)(len < sizeof line ? len : sizeof line - 1), t);
        coord(a, (x0 + x1) / 2);
        fprintf(f, "<text class=\"title\" x=\"%s\" y=\"%d\" text-anchor=\"middle\" font-size=\"%d\"%s "
                   "fill=\"#222222\">", a, 6 + TITLE_ROW * (i + 1), i ? 12 : 14, i ? "" : " font-weight=\"bold\"");
        asn_xml_escape(f, line);
        fprintf(f, "</text>\n");
        t = nl ? nl + 1 : t + len;
    }
    /* one grid line per decade */
    fprintf(f, "<g class=\"grid\" stroke=\"#e3e3e3\" stroke-width=\"1\">\n");
    for (int k = dec_lo; k <= dec_hi; k++) {
        coord(a, asn_plot_py(p, k)), coord(b, x0), coord(c, x1);
        fprintf(f, "<line x1=\"%s\" y1=\"%s\" x2=\"%s\" y2=\"%s\"/>\n", b, a, c, a);
    }
    frame_and_ticks(f, x0, y0, x1, y1);
    for (int k = dec_lo; k <= dec_hi; k++) {
        coord(a, asn_plot_py(p, k)), coord(b, x0), coord(c, x0 - TICK_LEN), coord(d, x0 - TICK_LEN - 3);
        fprintf(f, "<line x1=\"%s\" y1=\"%s\" x2=\"%s\" y2=\"%s\" stroke=\"#555555\"/>", b, a, c, a);
        decade_label(f, d, a, k);
    }
    fprintf(f, "</g>\n");
    /* category labels, rotated, ending under their category */
    fprintf(f, "<g class=\"labels\" fill=\"#222222\" font-size=\"11\">\n");
    for (int i = 0; i < n; i++) {
        coord(a, asn_plot_px(p, i)), coord(b, y1), coord(c, y1 + TICK_LEN), coord(d, y1 + TICK_LEN + 4);
        fprintf(f, "<line x1=\"%s\" y1=\"%s\" x2=\"%s\" y2=\"%s\" stroke=\"#555555\"/>"
                   "<text class=\"label\" transform=\"translate(%s %s) rotate(-60)\" dy=\"4\" text-anchor=\"end\">",
                a, b, a, c, a, d);
        asn_xml_escape(f, labels ? labels[i] : "");
        fprintf(f, "</text>\n");
    }
    fprintf(f, "</g>\n");
    coord(a, (y0 + y1) / 2);
    fprintf(f, "<text class=\"axis-label\" transform=\"translate(18 %s) rotate(-90)\" text-anchor=\"middle\" "
               "font-size=\"13\" fill=\"#222222\">", a);
    asn_xml_escape(f, ylabel);
    fprintf(f, "</text>\n");
}

void asn_plot_bar(asn_plot *p, double x0, double x1, double y0, double y1, const char *fill, const char *cls,
                  const char *title)
{
    double top = p->top, bot = p->height - p->bottom;
    double xa = asn_plot_px(p, x0 < x1 ? x0 : x1), xb = asn_plot_px(p, x0 < x1 ? x1 : x0);
    double ya = asn_plot_py(p, y0 > y1 ? y0 : y1), yb = asn_plot_py(p, y0 > y1 ? y1 : y0);
    /* clipped to the plot area; -inf (the log of 0) and NaN are below it */
    ya = isnan(ya) ? bot : ya < top ? top : ya > bot ? bot : ya;
    yb = isnan(yb) ? bot : yb < top ? top : yb > bot ? bot : yb;
    char a[32], b[32], c[32], d[32];
    coord(a, xa), coord(b, ya), coord(c, xb - xa), coord(d, yb - ya);
    fprintf(p->f, "<rect");
    if (cls) {
        fprintf(p->f, " class=\"");
        asn_xml_escape(p->f, cls);
        fprintf(p->f, "\"");
    }
    fprintf(p->f, " x=\"%s\" y=\"%s\" width=\"%s\" height=\"%s\" fill=\"%s\"", a, b, c, d, fill);
    if (title) {
        fprintf(p->f, "><title>");
        asn_xml_escape(p->f, title);
        fprintf(p->f, "</title></rect>\n");
    } else {
        fprintf(p->f, "/>\n");
    }
}
