/* Names and sizes of every public enumeration, generated from the X-macros in dnnjit.h so
 * that each name is written once. */
#include "graph/graph.h"

#include <string.h>

static const char *const status_texts[] = {
#define TEXT_(name, text) text,
    DNNJIT_STATUS_MAP(TEXT_)
#undef TEXT_
};
static const char *const status_names[] = {
#define NAME_(name, text) #name,
    DNNJIT_STATUS_MAP(NAME_)
#undef NAME_
};
#define COUNT_OF(a) ((int)(sizeof(a) / sizeof((a)[0])))

const char *dnnjit_status_string(dnnjit_status_t status)
{
    if ((int)status < 0 || (int)status >= COUNT_OF(status_texts))
        return "unknown status";
    return status_texts[status];
}

const char *dnnjit_status_name(dnnjit_status_t status)
{
    if ((int)status < 0 || (int)status >= COUNT_OF(status_names))
        return NULL;
    return status_names[status];
}

static const char *const data_type_names[] = {
#define NAME_(name, size) #name,
    DNNJIT_DATA_TYPE_MAP(NAME_)
#undef NAME_
};
static const size_t data_type_sizes[] = {
#define SIZE_(name, size) size,
    DNNJIT_DATA_TYPE_MAP(SIZE_)
#undef SIZE_
};

const char *dnnjit_data_type_name(dnnjit_data_type_t type)
{
    if ((int)type < 0 || (int)type >= DNNJIT_DATA_TYPE_COUNT_)
        return NULL;
    return data_type_names[type];
}

size_t dnnjit_data_type_size(dnnjit_data_type_t type)
{
    if ((int)type < 0 || (int)type >= DNNJIT_DATA_TYPE_COUNT_)
        return 0;
    return data_type_sizes[type];
}

/* Looks `name` up in a table of `count` names for the parser `fn` of `kind` names. Like
 * every public call, a failure leaves a message for dnnjit_last_error(). */
static dnnjit_status_t parse_name(const char *fn, const char *kind, const char *const *names, int count,
                                  const char *name, const void *out, int *index)
{
    if (!name || !out)
        return dnnjit__fail(NULL, DNNJIT_STATUS_BAD_PARAM, "%s: %s is NULL", fn, name ? "out" : "name");
    for (int i = 0; i < count; i++)
        if (strcmp(names[i], name) == 0) {
            *index = i;
            return DNNJIT_STATUS_SUCCESS;
        }
    return dnnjit__fail(NULL, DNNJIT_STATUS_NOT_FOUND, "%s: \"%s\" is not a %s name", fn, name, kind);
}

dnnjit_status_t dnnjit_data_type_from_name(const char *name, dnnjit_data_type_t *out)
{
    int i = 0;
    dnnjit_status_t s =
        parse_name("dnnjit_data_type_from_name", "data type", data_type_names, DNNJIT_DATA_TYPE_COUNT_, name, out, &i);
    if (!s)
        *out = (dnnjit_data_type_t)i;
    return s;
}

static const char *const pointwise_names[] = {
#define NAME_(name, arity) #name,
    DNNJIT_POINTWISE_MODE_MAP(NAME_)
#undef NAME_
};
static const int pointwise_arity[] = {
#define ARITY_(name, arity) arity,
    DNNJIT_POINTWISE_MODE_MAP(ARITY_)
#undef ARITY_
};

const char *dnnjit_pointwise_mode_name(dnnjit_pointwise_mode_t mode)
{
    if ((int)mode < 0 || (int)mode >= DNNJIT_POINTWISE_MODE_COUNT_)
        return NULL;
    return pointwise_names[mode];
}

int dnnjit_pointwise_mode_arity(dnnjit_pointwise_mode_t mode)
{
    if ((int)mode < 0 || (int)mode >= DNNJIT_POINTWISE_MODE_COUNT_)
        return 0;
    return pointwise_arity[mode];
}

dnnjit_status_t dnnjit_pointwise_mode_from_name(const char *name, dnnjit_pointwise_mode_t *out)
{
    int i = 0;
    dnnjit_status_t s =
        parse_name("dnnjit_pointwise_mode_from_name", "pointwise mode", pointwise_names,
                   DNNJIT_POINTWISE_MODE_COUNT_, name, out, &i);
    if (!s)
        *out = (dnnjit_pointwise_mode_t)i;
    return s;
}

static const char *const reduction_names[] = {
#define NAME_(name) #name,
    DNNJIT_REDUCTION_MODE_MAP(NAME_)
#undef NAME_
};

const char *dnnjit_reduction_mode_name(dnnjit_reduction_mode_t mode)
{
    if ((int)mode < 0 || (int)mode >= DNNJIT_REDUCTION_MODE_COUNT_)
        return NULL;
    return reduction_names[mode];
}

dnnjit_status_t dnnjit_reduction_mode_from_name(const char *name, dnnjit_reduction_mode_t *out)
{
    int i = 0;
    dnnjit_status_t s =
        parse_name("dnnjit_reduction_mode_from_name", "reduction mode", reduction_names,
                   DNNJIT_REDUCTION_MODE_COUNT_, name, out, &i);
    if (!s)
        *out = (dnnjit_reduction_mode_t)i;
    return s;
}

static const char *const op_names[] = {
#define NAME_(name) #name,
    DNNJIT_OP_MAP(NAME_)
#undef NAME_
};

const char *dnnjit_op_name(dnnjit_op_t op)
{
    if ((int)op < 0 || (int)op >= DNNJIT_OP_COUNT_)
        return NULL;
    return op_names[op];
}

const char *dnnjit_version_string(void)
{
#define STR2_(x) #x
#define STR_(x) STR2_(x)
    return STR_(DNNJIT_VERSION_MAJOR) "." STR_(DNNJIT_VERSION_MINOR) "." STR_(DNNJIT_VERSION_PATCH);
#undef STR_
#undef STR2_
}
