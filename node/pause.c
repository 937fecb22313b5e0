/* The pod sandbox's process: holds the pod's namespaces open and does nothing else. As PID 1 of a pod that shares
 * its process namespace it reaps orphans; SIGINT and SIGTERM end it at once, so a pod stops without the grace
 * period. Built static, so its image is this one file. */
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static void stop(int signal_number) { (void)signal_number; _exit(0); }

static void reap(int signal_number) {
    (void)signal_number;
    while (waitpid(-1, NULL, WNOHANG) > 0) {
    }
}

int main(void) {
    struct sigaction on_stop = {.sa_handler = stop};
    struct sigaction on_child = {.sa_handler = reap, .sa_flags = SA_NOCLDSTOP | SA_RESTART};
    if (getpid() != 1) {
        /* outside a container it would only wait forever: say so instead */
        const char message[] = "pause: meant to run as PID 1 of a pod sandbox\n";
        (void)!write(2, message, sizeof message - 1);
    }
    sigaction(SIGINT, &on_stop, NULL);
    sigaction(SIGTERM, &on_stop, NULL);
    sigaction(SIGCHLD, &on_child, NULL);
    for (;;) pause();
    return EXIT_FAILURE;
}
