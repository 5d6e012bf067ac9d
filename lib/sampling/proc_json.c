/* proc_json.c — the JSON constraint: the generated text must stay a prefix
 * of a valid JSON value (RFC 8259), or of an object with {"object": true}.
 * A pushdown recognizer is run over the text generated so far, then every
 * token's bytes are tried from that state; tokens that cannot continue a
 * valid prefix are removed. End-of-generation is allowed only once the
 * value is complete, and then nothing else is. */
#include "proc.h"
#include "asn/vocab.h"

#include <math.h>
#include <string.h>

enum { MAX_DEPTH = 48 };

typedef struct json_params {
    int object; /* the value must be an object */
} json_params;

enum mode {
    J_VALUE,  /* a value is expected */
    J_KEY,    /* a key string (or '}' when the object is empty) */
    J_COLON,
    J_STRING,
    J_ESC,
    J_UHEX,
    J_NUM,
    J_LIT,
    J_AFTER,  /* after a value inside a container: ',' or the closer */
    J_DONE,   /* the top-level value is complete */
};

enum num { N_MINUS, N_ZERO, N_INT, N_DOT, N_FRAC, N_E, N_ESIGN, N_EXP };

typedef struct jstate {
    uint8_t mode, sub, is_key, first, depth, object_root;
    char lit[6];   /* rest of true/false/null still expected */
    char stack[MAX_DEPTH];
} jstate;

static void value_end(jstate *s) { s->mode = s->depth ? J_AFTER : J_DONE; }

static int is_ws(unsigned char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

static int num_complete(uint8_t sub) { return sub == N_ZERO || sub == N_INT || sub == N_FRAC || sub == N_EXP; }

/* Feeds one byte; 0 if the text is still a valid prefix, -1 if not. */
static int feed(jstate *s, unsigned char c)
{
    switch (s->mode) {
    case J_VALUE:
        if (is_ws(c))
            return 0;
        if (s->object_root && !s->depth && c != '{')
            return -1;
        if (c == '{' || c == '[') {
            if (s->depth == MAX_DEPTH)
                return -1;
            s->stack[s->depth++] = (char)c;
            s->mode = c == '{' ? J_KEY : J_VALUE;
            s->first = 1;
            return 0;
        }
        if (c == ']' && s->first && s->depth && s->stack[s->depth - 1] == '[') {
            s->depth--;
            value_end(s);
            return 0;
        }
        s->first = 0;
        if (c == '"') {
            s->mode = J_STRING, s->is_key = 0;
            return 0;
        }
        if (c == '-' || (c >= '0' && c <= '9')) {
            s->mode = J_NUM;
            s->sub = c == '-' ? N_MINUS : c == '0' ? N_ZERO : N_INT;
            return 0;
        }
        const char *lit = c == 't' ? "rue" : c == 'f' ? "alse" : c == 'n' ? "ull" : NULL;
        if (!lit)
            return -1;
        s->mode = J_LIT;
        strcpy(s->lit, lit);
        return 0;
    case J_KEY:
        if (is_ws(c))
            return 0;
        if (c == '"') {
            s->mode = J_STRING, s->is_key = 1, s->first = 0;
            return 0;
        }
        if (c == '}' && s->first) {
            s->depth--;
            value_end(s);
            return 0;
        }
        return -1;
    case J_COLON:
        if (is_ws(c))
            return 0;
        if (c != ':')
            return -1;
        s->mode = J_VALUE, s->first = 0;
        return 0;
    case J_STRING:
        if (c == '"') {
            if (s->is_key)
                s->mode = J_COLON;
            else
                value_end(s);
            return 0;
        }
        if (c == '\\')
            s->mode = J_ESC;
        return c < 0x20 ? -1 : 0;
    case J_ESC:
        if (c == 'u') {
            s->mode = J_UHEX, s->sub = 0;
            return 0;
        }
        if (!strchr("\"\\/bfnrt", c) || !c)
            return -1;
        s->mode = J_STRING;
        return 0;
    case J_UHEX:
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')))
            return -1;
        if (++s->sub == 4)
            s->mode = J_STRING;
        return 0;
    case J_NUM: {
        int digit = c >= '0' && c <= '9';
        switch (s->sub) {
        case N_MINUS:
            if (!digit)
                return -1;
            s->sub = c == '0' ? N_ZERO : N_INT;
            return 0;
        case N_ZERO:
        case N_INT:
            if (digit && s->sub == N_INT)
                return 0;
            if (c == '.') {
                s->sub = N_DOT;
                return 0;
            }
            if (c == 'e' || c == 'E') {
                s->sub = N_E;
                return 0;
            }
            break;
        case N_DOT:
            if (!digit)
                return -1;
            s->sub = N_FRAC;
            return 0;
        case N_FRAC:
            if (digit)
                return 0;
            if (c == 'e' || c == 'E') {
                s->sub = N_E;
                return 0;
            }
            break;
        case N_E:
            if (c == '+' || c == '-') {
                s->sub = N_ESIGN;
                return 0;
            }
            /* fall through */
        case N_ESIGN:
            if (!digit)
                return -1;
            s->sub = N_EXP;
            return 0;
        case N_EXP:
            if (digit)
                return 0;
            break;
        }
        if (!num_complete(s->sub))
            return -1;
        value_end(s); /* the number ended: the byte belongs to what follows */
        return feed(s, c);
    }
    case J_LIT:
        if ((unsigned char)s->lit[0] != c)
            return -1;
        memmove(s->lit, s->lit + 1, strlen(s->lit));
        if (!s->lit[0])
            value_end(s);
        return 0;
    case J_AFTER: {
        if (is_ws(c))
            return 0;
        char top = s->stack[s->depth - 1];
        if (c == ',') {
            s->mode = top == '{' ? J_KEY : J_VALUE;
            s->first = 0;
            return 0;
        }
        if ((c == '}' && top == '{') || (c == ']' && top == '[')) {
            s->depth--;
            value_end(s);
            return 0;
        }
        return -1;
    }
    case J_DONE:
    default:
        return -1;
    }
}

/* 1 when the text is a complete value (a top-level number that could go on
 * counts as complete). */
static int complete(const jstate *s)
{
    return s->mode == J_DONE || (s->mode == J_NUM && !s->depth && num_complete(s->sub));
}

/* The state after the generated tokens; -1 if they are not a valid prefix. */
static int state_after(const asn_seq_ctx *ctx, int object_root, jstate *s)
{
    memset(s, 0, sizeof *s);
    s->mode = J_VALUE;
    s->object_root = (uint8_t)object_root;
    for (int i = ctx->n_prompt; i < ctx->n_ids; i++) {
        size_t len;
        const char *p = asn_vocab_piece(ctx->vocab, ctx->ids[i], 0, &len);
        for (size_t k = 0; k < len; k++)
            if (feed(s, (unsigned char)p[k]))
                return -1;
    }
    return 0;
}

int asn_json_complete(const asn_seq_ctx *ctx, int object_root)
{
    jstate s;
    return ctx && ctx->vocab && !state_after(ctx, object_root, &s) && complete(&s);
}

static int json_complete(const asn_proc *p, const asn_seq_ctx *ctx)
{
    return asn_json_complete(ctx, ((const json_params *)p->params)->object);
}

static int json_apply(const asn_proc *p, float *x, int V, const asn_seq_ctx *ctx, asn_seq_state *st,
                      asn_workspace *ws, asn_err *e)
{
    if (!ctx || !ctx->vocab)
        return asn_err_set(e, "the json constraint needs the model's tokenizer");
    jstate s;
    if (state_after(ctx, ((const json_params *)p->params)->object, &s))
        return asn_err_set(e, "the text generated so far is not a JSON prefix");
    int done = complete(&s);
    for (int t = 0; t < V; t++) {
        if (x[t] == -INFINITY)
            continue;
        if (asn_vocab_is_eog(ctx->vocab, t)) {
            if (!done)
                x[t] = -INFINITY;
            continue;
        }
        size_t len;
        const char *piece = asn_vocab_piece(ctx->vocab, t, 0, &len);
        if (s.mode == J_DONE || !len) { /* complete: only the end; empty pieces never */
            x[t] = -INFINITY;
            continue;
        }
        jstate c = s;
        for (size_t k = 0; k < len; k++)
            if (feed(&c, (unsigned char)piece[k])) {
                x[t] = -INFINITY;
                break;
            }
    }
    return 0;
}

/* Applied in its place in the list (not before the others, unlike the
 * grammar constraints of proc_constraint.c). */
const asn_proc_iface asn_procs_json[] = {
    {.name = "json", .kind = ASN_PROC_JSON, .size = sizeof(json_params),
     .doc = "The json constraint: the generated text must stay a prefix of a valid JSON value (an object with "
            "object: true); end of generation only once the value is complete. Needs the model's tokenizer.",
     .params = {ASN_BOOL("object", json_params, object, "The value must be an object.")},
     .apply = json_apply, .complete = json_complete},
    {0},
};
