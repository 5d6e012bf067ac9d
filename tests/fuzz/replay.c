/* replay.c — runs a fuzz target over its seeds and every input kept in
 * tests/fuzz/regressions/<target>/ (inputs that once crashed it), as a
 * unit test: one "ok" line per input; a crash fails the run. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int replay_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    struct dirent *ent;
    int n = 0;
    while ((ent = readdir(d))) {
        if (ent->d_name[0] == '.')
            continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, ent->d_name);
        FILE *f = fopen(path, "rb");
        if (!f)
            continue;
        uint8_t *buf = NULL;
        size_t len = 0, cap = 0, k;
        do {
            if (len + 4096 > cap)
                buf = realloc(buf, cap = (cap + 4096) * 2);
            k = fread(buf + len, 1, 4096, f);
            len += k;
        } while (k > 0);
        fclose(f);
        LLVMFuzzerTestOneInput(buf, len);
        free(buf);
        printf("ok - replay %s/%s\n", strrchr(dir, '/') ? strrchr(dir, '/') + 1 : dir, ent->d_name);
        n++;
    }
    closedir(d);
    return n;
}

int main(int argc, char **argv)
{
    const char *root = getenv("ASN_ROOT");
    const char *name = strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0];
    name += strlen("test_replay_");
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/tests/fuzz/regressions/%s", root ? root : ".", name);
    int n = replay_dir(dir);
    snprintf(dir, sizeof dir, "%s/tests/fuzz/seeds/%s", root ? root : ".", name);
    n += replay_dir(dir);
    (void)argc;
    if (!n)
        printf("not ok - no inputs found for %s\n", name);
    return n ? 0 : 1;
}
