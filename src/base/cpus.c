/* cpus.c - the CPUs this process may use (see cpus.h).
 *
 * Where the files are: /proc/self/cgroup names the process's cgroup per hierarchy
 * ("ID:controllers:path"; v2 is "0::path"), /proc/self/mountinfo where each
 * hierarchy is mounted and which part of it ("ID PARENT DEV ROOT MOUNTPOINT ... -
 * FSTYPE SOURCE OPTIONS"; a container sees its own cgroup as the mount's root). A
 * machine may mount both: v1 controllers under /sys/fs/cgroup/<controller> and v2
 * at /sys/fs/cgroup/unified, with the cpu controller on only one of them.
 *
 * A quota of 1.5 CPUs gives one thread, not two: the pool's threads meet at the end
 * of every pass, and a thread throttled for the rest of a period stalls them all. */
#include "cpus.h"

#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PATH_LEN 4096

/* The first line of a file into buf; 0 on success. */
static int read_line(const char *path, char *buf, size_t n) {
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    char *ok = fgets(buf, (int)n, f);
    fclose(f);
    return ok ? 0 : -1;
}

/* quota / period in whole CPUs, rounded down but at least 1; 0: no limit. */
static int quota_cpus(long long quota, long long period) {
    if (quota <= 0 || period <= 0) return 0;
    long long n = quota / period;
    return n < 1 ? 1 : n > INT_MAX ? INT_MAX : (int)n;
}

/* cgroup v2: cpu.max is "max PERIOD" or "QUOTA PERIOD". */
static int v2_limit(const char *dir) {
    char p[PATH_LEN + 16], line[128], q[32];
    long long period;
    snprintf(p, sizeof p, "%s/cpu.max", dir);
    if (read_line(p, line, sizeof line) || sscanf(line, "%31s %lld", q, &period) != 2 || !strcmp(q, "max"))
        return 0;
    return quota_cpus(atoll(q), period);
}

/* cgroup v1: cpu.cfs_quota_us (-1: none) over cpu.cfs_period_us. */
static int v1_limit(const char *dir) {
    char p[PATH_LEN + 32], line[64];
    snprintf(p, sizeof p, "%s/cpu.cfs_quota_us", dir);
    if (read_line(p, line, sizeof line)) return 0;
    long long quota = atoll(line);
    snprintf(p, sizeof p, "%s/cpu.cfs_period_us", dir);
    if (read_line(p, line, sizeof line)) return 0;
    return quota_cpus(quota, atoll(line));
}

/* The tightest limit of dir and its ancestors, up to the mount point (the first top
 * bytes of dir). A parent's quota bounds every child. */
static int tightest(char *dir, size_t top, int (*limit)(const char *)) {
    int best = 0;
    for (;;) {
        int n = limit(dir);
        if (n && (!best || n < best)) best = n;
        char *slash = strrchr(dir, '/');
        if (strlen(dir) <= top || !slash || (size_t)(slash - dir) < top) break;
        *slash = '\0';
    }
    return best;
}

/* 1 if the comma-separated list holds `item`. */
static int has_item(const char *list, const char *item) {
    size_t n = strlen(item);
    for (const char *s = list; s && *s; s = strchr(s, ',') ? strchr(s, ',') + 1 : NULL)
        if (!strncmp(s, item, n) && (s[n] == ',' || s[n] == '\0')) return 1;
    return 0;
}

/* The directory of cgroup `path` in the hierarchy mounted with fstype (and, for v1,
 * the cpu controller among its options), under root; its mount point's length in
 * *top. 0 on success. */
static int cgroup_dir(const char *root, size_t rlen, const char *path, int v2, char *dir, size_t n, size_t *top) {
    char p[PATH_LEN], line[PATH_LEN];
    snprintf(p, sizeof p, "%.*s/proc/self/mountinfo", (int)rlen, root);
    FILE *f = fopen(p, "r");
    if (!f) return -1;
    int found = -1;
    while (found && fgets(line, sizeof line, f)) {
        char mroot[1024], mnt[1024], fstype[64], opts[1024];
        const char *sep = strstr(line, " - ");
        if (!sep || sscanf(line, "%*s %*s %*s %1023s %1023s", mroot, mnt) != 2 ||
            sscanf(sep + 3, "%63s %*s %1023s", fstype, opts) != 2)
            continue;
        if (v2 ? strcmp(fstype, "cgroup2") : strcmp(fstype, "cgroup") || !has_item(opts, "cpu")) continue;
        /* the path below the mount's root; a path outside it (another namespace's
         * view) is the mount point itself */
        size_t ml = strcmp(mroot, "/") ? strlen(mroot) : 0;
        const char *rel = !strncmp(path, mroot, ml) && (path[ml] == '/' || path[ml] == '\0') ? path + ml : "";
        if (!strcmp(rel, "/")) rel = "";
        if (!strcmp(mnt, "/")) mnt[0] = '\0';
        *top = rlen + strlen(mnt);
        found = (size_t)snprintf(dir, n, "%.*s%s%s", (int)rlen, root, mnt, rel) < n ? 0 : -1;
    }
    fclose(f);
    return found;
}

/* The tightest cgroup quota of this process in whole CPUs (0: none), and its version. */
static int cgroup_quota(const char *root, cpus_source *why) {
    size_t rlen = strlen(root);
    while (rlen > 0 && root[rlen - 1] == '/') rlen--;
    char p[PATH_LEN], line[PATH_LEN], dir[PATH_LEN];
    snprintf(p, sizeof p, "%.*s/proc/self/cgroup", (int)rlen, root);
    FILE *f = fopen(p, "r");
    if (!f) return 0;
    int best = 0;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c2) continue;
        *c1 = *c2 = '\0';
        int v2 = !strcmp(line, "0") && c1 + 1 == c2;
        if (!v2 && !has_item(c1 + 1, "cpu")) continue;
        size_t top;
        if (cgroup_dir(root, rlen, c2 + 1, v2, dir, sizeof dir, &top)) continue;
        int n = tightest(dir, top, v2 ? v2_limit : v1_limit);
        if (n && (!best || n < best)) {
            best = n;
            *why = v2 ? CPUS_CGROUP_V2 : CPUS_CGROUP_V1;
        }
    }
    fclose(f);
    return best;
}

void cpus_detect(const char *root, int online, int affinity, cpus_info *out) {
    cpus_info c = {.online = online < 1 ? 1 : online, .affinity = affinity < 1 ? 1 : affinity};
    if (c.affinity > c.online) c.affinity = c.online;
    cpus_source qwhy = CPUS_CGROUP_V1;
    c.quota = cgroup_quota(root, &qwhy);
    c.n = c.affinity;
    c.why = c.affinity < c.online ? CPUS_AFFINITY : CPUS_ONLINE;
    if (c.quota && c.quota < c.n) {
        c.n = c.quota;
        c.why = qwhy;
    }
    *out = c;
}

void cpus_of_process(cpus_info *out) {
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    int affinity = (int)(online > INT_MAX ? INT_MAX : online);
    cpu_set_t *set = CPU_ALLOC(CPU_SETSIZE * 8);
    size_t size = CPU_ALLOC_SIZE(CPU_SETSIZE * 8);
    if (set && !sched_getaffinity(0, size, set)) affinity = CPU_COUNT_S(size, set);
    CPU_FREE(set);
    cpus_detect("/", (int)(online > INT_MAX ? INT_MAX : online), affinity, out);
}

const char *cpus_source_name(cpus_source s) {
    switch (s) {
    case CPUS_AFFINITY: return "affinity mask";
    case CPUS_CGROUP_V1: return "cgroup v1 quota";
    case CPUS_CGROUP_V2: return "cgroup v2 quota";
    case CPUS_ONLINE: break;
    }
    return "online CPUs";
}
