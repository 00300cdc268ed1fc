#include "util.h"

static void seed000_validates(void **state)
{
    (void)state;
    dnnjit_graph_t g = tu_graph(DNNJIT_DATA_TYPE_HALF);
    dnnjit_tensor_t a = tu_tensor(g, "A", 3, TU_DIMS(4, 64, 128), NULL, DNNJIT_DATA_TYPE_HALF);
    dnnjit_tensor_t b = tu_tensor(g, "B", 3, TU_DIMS(4, 128, 64), NULL, DNNJIT_DATA_TYPE_HALF);
    dnnjit_tensor_t c;
    TU_OK(dnnjit_graph_matmul(g, a, b, NULL, &c));
    TU_OK(dnnjit_tensor_set_output(g, c, true));
    TU_OK(dnnjit_graph_validate(g));
    dnnjit_tensor_info_t info;
    TU_OK(dnnjit_tensor_get_info(g, c, &info));
    assert_int_equal(info.ndim, 3);
    assert_int_equal(info.dim[1], 64);
    assert_int_equal(info.stride[0], 4096);
    assert_int_equal(info.data_type, DNNJIT_DATA_TYPE_HALF);
    dnnjit_graph_destroy(g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(seed000_validates)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
