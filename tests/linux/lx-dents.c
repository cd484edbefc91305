/* lx-dents: getdents64 on a big directory (more entries than one call's
 * buffer holds), through readdir. */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

int main(void) {
    mkdir("big", 0755);
    char name[64];
    for (int i = 0; i < 300; i++) {
        snprintf(name, sizeof name, "big/file-with-a-long-name-%03d", i);
        close(open(name, O_CREAT | O_WRONLY, 0644));
    }
    DIR *d = opendir("big");
    int count = 0, files = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        count++;
        if (e->d_type == DT_REG) files++;
    }
    closedir(d);
    printf("entries %d (with . and ..), regular files %d\n", count, files);
    for (int i = 0; i < 300; i++) {
        snprintf(name, sizeof name, "big/file-with-a-long-name-%03d", i);
        unlink(name);
    }
    printf("rmdir %d\n", rmdir("big"));
    return 0;
}
