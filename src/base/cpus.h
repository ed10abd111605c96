/* cpus.h - how many CPUs this process may use: the CPUs of its affinity mask
 * (taskset, numactl, a Slurm or container cpuset) and its cgroup CPU quota (v2
 * cpu.max, v1 cpu.cfs_quota_us / cpu.cfs_period_us, the tightest of the process's
 * cgroup and its ancestors), whichever is smaller. The worker pool is sized by it.
 *
 * The cgroup files are read under a root directory ("/" for this machine), so a
 * test can hand it a tree of fixture files: ROOT/proc/self/cgroup,
 * ROOT/proc/self/mountinfo and the controller files under the mount points that
 * mountinfo names. */
#ifndef LLMGEN_CPUS_H
#define LLMGEN_CPUS_H

/* What decided the count. */
typedef enum {
    CPUS_ONLINE = 0,    /* every online CPU: no narrower mask, no quota */
    CPUS_AFFINITY = 1,  /* the affinity mask, narrower than the online CPUs */
    CPUS_CGROUP_V1 = 2, /* a cgroup v1 quota, cpu.cfs_quota_us / cpu.cfs_period_us */
    CPUS_CGROUP_V2 = 3, /* a cgroup v2 quota, cpu.max */
} cpus_source;

typedef struct {
    int n;             /* CPUs to use, >= 1: min(affinity, quota) */
    int online;        /* online CPUs */
    int affinity;      /* CPUs in the affinity mask */
    int quota;         /* the tightest cgroup quota in whole CPUs (quota / period rounded down,
                          at least 1); 0: no quota */
    cpus_source why;   /* what set n (the mask wins a tie with a quota) */
} cpus_info;

/* The limits under root for a process whose mask holds `affinity` of `online` CPUs
 * (values < 1 are taken as 1). Files that are missing or unreadable mean no limit. */
void cpus_detect(const char *root, int online, int affinity, cpus_info *out);

/* This process: sysconf, sched_getaffinity and the cgroup files under "/". */
void cpus_of_process(cpus_info *out);

/* "online CPUs", "affinity mask", "cgroup v1 quota" or "cgroup v2 quota". */
const char *cpus_source_name(cpus_source s);

#endif
