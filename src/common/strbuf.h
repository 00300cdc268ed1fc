/* A growable string for code generation. A failed allocation sticks (`failed`), so callers
 * append freely and check once at the end. */
#ifndef DNNJIT_COMMON_STRBUF_H
#define DNNJIT_COMMON_STRBUF_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

typedef struct dnnjit__strbuf {
    char *data;
    size_t len, cap;
    bool failed;
} dnnjit__strbuf_t;

void dnnjit__sb_printf(dnnjit__strbuf_t *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void dnnjit__sb_vprintf(dnnjit__strbuf_t *sb, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));
void dnnjit__sb_append(dnnjit__strbuf_t *sb, const char *text);
/* Hands the text over (caller frees) or NULL after a failure; the buffer is reset. */
char *dnnjit__sb_take(dnnjit__strbuf_t *sb);
void dnnjit__sb_free(dnnjit__strbuf_t *sb);

#endif
