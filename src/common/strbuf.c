#include "common/strbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool reserve(dnnjit__strbuf_t *sb, size_t extra)
{
    if (sb->failed)
        return false;
    if (sb->len + extra + 1 <= sb->cap)
        return true;
    size_t cap = sb->cap ? sb->cap : 256;
    while (cap < sb->len + extra + 1)
        cap *= 2;
    char *p = realloc(sb->data, cap);
    if (!p) {
        sb->failed = true;
        return false;
    }
    sb->data = p;
    sb->cap = cap;
    return true;
}

void dnnjit__sb_vprintf(dnnjit__strbuf_t *sb, const char *fmt, va_list ap)
{
    /* Formatted straight into the spare room; only text that does not fit is formatted a
     * second time, after growing (code generation spends much of its time here). */
    va_list again;
    va_copy(again, ap);
    size_t room = sb->failed ? 0 : sb->cap - sb->len;
    int n = vsnprintf(room ? sb->data + sb->len : NULL, room, fmt, ap);
    if (n >= 0 && (size_t)n < room)
        sb->len += (size_t)n;
    else if (n >= 0 && reserve(sb, (size_t)n)) {
        vsnprintf(sb->data + sb->len, (size_t)n + 1, fmt, again);
        sb->len += (size_t)n;
    }
    va_end(again);
}

void dnnjit__sb_printf(dnnjit__strbuf_t *sb, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    dnnjit__sb_vprintf(sb, fmt, ap);
    va_end(ap);
}

void dnnjit__sb_append(dnnjit__strbuf_t *sb, const char *text)
{
    size_t n = strlen(text);
    if (!reserve(sb, n))
        return;
    memcpy(sb->data + sb->len, text, n + 1);
    sb->len += n;
}

char *dnnjit__sb_take(dnnjit__strbuf_t *sb)
{
    char *text = sb->failed ? NULL : sb->data;
    if (sb->failed)
        free(sb->data);
    *sb = (dnnjit__strbuf_t){0};
    return text;
}

void dnnjit__sb_free(dnnjit__strbuf_t *sb)
{
    free(sb->data);
    *sb = (dnnjit__strbuf_t){0};
}
