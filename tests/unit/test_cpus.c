/* test_cpus.c - cpus_detect (src/base/cpus.c) on the cgroup trees of tests/fixtures/cgroup/
 * (see its README): v1, v2, a container's view, no limit, no files at all; quotas
 * below and above the affinity mask. Run from the repository root. */
#include <criterion/criterion.h>
#include <unistd.h>

#include "base/cpus.h"

#define TREES "tests/fixtures/cgroup/"

static cpus_info detect(const char *tree, int online, int affinity) {
    if (access(TREES "v1/proc/self/cgroup", R_OK)) cr_skip_test("no " TREES " (run from the repository root)");
    cpus_info c;
    cpus_detect(tree, online, affinity, &c);
    return c;
}

Test(cpus, v1_quota_below_the_mask) {
    /* the job's 3 CPUs under its parent's 6 */
    cpus_info c = detect(TREES "v1", 16, 8);
    cr_expect_eq(c.quota, 3);
    cr_expect_eq(c.n, 3);
    cr_expect_eq(c.why, CPUS_CGROUP_V1);
    cr_expect_str_eq(cpus_source_name(c.why), "cgroup v1 quota");
}

Test(cpus, v1_quota_above_the_mask) {
    cpus_info c = detect(TREES "v1", 16, 2);
    cr_expect_eq(c.quota, 3);
    cr_expect_eq(c.n, 2);
    cr_expect_eq(c.why, CPUS_AFFINITY);
    cr_expect_str_eq(cpus_source_name(c.why), "affinity mask");
}

Test(cpus, v2_quota_of_the_parent_rounds_down) {
    /* the leaf says max, its parent 2.5 CPUs */
    cpus_info c = detect(TREES "v2", 64, 64);
    cr_expect_eq(c.quota, 2);
    cr_expect_eq(c.n, 2);
    cr_expect_eq(c.why, CPUS_CGROUP_V2);
    c = detect(TREES "v2/", 64, 1); /* a root with a trailing slash; the mask is tighter */
    cr_expect_eq(c.quota, 2);
    cr_expect_eq(c.n, 1);
    cr_expect_eq(c.why, CPUS_AFFINITY);
    c = detect(TREES "v2", 2, 2); /* a tie: the mask, here every online CPU */
    cr_expect_eq(c.n, 2);
    cr_expect_eq(c.why, CPUS_ONLINE);
}

Test(cpus, container_half_a_cpu_is_one) {
    cpus_info c = detect(TREES "container", 8, 8);
    cr_expect_eq(c.quota, 1);
    cr_expect_eq(c.n, 1);
    cr_expect_eq(c.why, CPUS_CGROUP_V1);
}

Test(cpus, no_limit) {
    cpus_info c = detect(TREES "none", 4, 4);
    cr_expect_eq(c.quota, 0);
    cr_expect_eq(c.n, 4);
    cr_expect_eq(c.why, CPUS_ONLINE);
    cr_expect_str_eq(cpus_source_name(c.why), "online CPUs");
    c = detect(TREES "none", 4, 3);
    cr_expect_eq(c.n, 3);
    cr_expect_eq(c.why, CPUS_AFFINITY);
    c = detect(TREES "no-such-tree", 4, 0); /* no files at all; a mask count below 1 is 1 */
    cr_expect_eq(c.quota, 0);
    cr_expect_eq(c.n, 1);
}

Test(cpus, this_process) {
    cpus_info c;
    cpus_of_process(&c);
    cr_expect_geq(c.n, 1);
    cr_expect_leq(c.n, c.affinity);
    cr_expect_leq(c.affinity, c.online);
}
