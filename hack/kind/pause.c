/* The pod sandbox's pause process, built static for the kind path's node
 * image: it waits for a signal and reaps zombies, as Kubernetes' own does. */
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static void quit(int sig) { (void)sig; _exit(0); }

static void reap(int sig) {
	(void)sig;
	while (waitpid(-1, NULL, WNOHANG) > 0) {
	}
}

int main(void) {
	struct sigaction q = {.sa_handler = quit};
	struct sigaction r = {.sa_handler = reap, .sa_flags = SA_NOCLDSTOP};
	sigaction(SIGINT, &q, NULL);
	sigaction(SIGTERM, &q, NULL);
	sigaction(SIGCHLD, &r, NULL);
	for (;;) {
		pause();
	}
	return 0;
}
