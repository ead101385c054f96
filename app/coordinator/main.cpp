// SPDX-License-Identifier: GPL-3.0-or-later
// rookery-coordinator: where a swarm meets.
#include <csignal>
#include <cstdio>

#include <pthread.h>
#include <sys/resource.h>

#include "app/coordinator/coordinator_cli.h"
#include "engine/common/error.h"
#include "engine/common/log.h"
#include "engine/coord/join_address.h"

namespace {

// Every node holds one TLS link: a swarm of thousands needs more descriptors than the
// usual soft limit of 1024. Raise it to the hard limit.
void raiseFileLimit()
{
    rlimit rl{};
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
}

} // namespace

int main(int argc, char **argv)
{
    using namespace rookery;
    // Line-buffered even into a pipe, so supervisors (tests, systemd) see the address at once.
    std::setvbuf(stdout, nullptr, _IOLBF, 0);
    app::CoordinatorOptions options;
    try {
        if (!app::parseCoordinatorOptions(argc, argv, options))
            return 0;
    } catch (const Error &e) {
        std::fprintf(stderr, "rookery-coordinator: %s\n", e.what());
        return 2;
    }
    if (options.invite) {
        try {
            std::printf("%s\n", coord::readJoinAddress(options.settings.dataDir, options.settings.publicHost).c_str());
            return 0;
        } catch (const Error &e) {
            std::fprintf(stderr, "rookery-coordinator invite: %s\n", e.what());
            return 1;
        }
    }
    if (options.quiet)
        log::setMinimumLevel(log::Level::Warning);
    raiseFileLimit();
    // Block the stop signals in every thread; main waits for them with sigwait().
    sigset_t stopSignals;
    sigemptyset(&stopSignals);
    sigaddset(&stopSignals, SIGINT);
    sigaddset(&stopSignals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stopSignals, nullptr);
    std::signal(SIGPIPE, SIG_IGN);
    try {
        coord::Coordinator coordinator(options.settings);
        std::printf("rookery-coordinator: run %s, model %s\n", coordinator.run().runId.c_str(),
                    coordinator.run().model.name.c_str());
        std::printf("status: https://%s:%u/v1/status\n", coordinator.coordinatorAddress().host.c_str(),
                    unsigned(coordinator.statusPort()));
        std::printf("status, full view (addresses, hardware): send 'Authorization: Bearer <token>' with the token "
                    "in %s\n",
                    coordinator.operatorTokenPath().c_str());
        std::printf("metrics: https://%s:%u/metrics\n", coordinator.coordinatorAddress().host.c_str(),
                    unsigned(coordinator.statusPort()));
        if (coordinator.relayPort())
            std::printf("relay: port %u\n", unsigned(coordinator.relayPort()));
        std::printf("address: %s\n", coordinator.address().c_str());
        int signal = 0;
        sigwait(&stopSignals, &signal);
        std::printf("stopping (%s)\n", signal == SIGINT ? "SIGINT" : "SIGTERM");
        coordinator.stop();
        std::printf("stopped\n");
        return 0;
    } catch (const Error &e) {
        std::fprintf(stderr, "rookery-coordinator: error: %s\n", e.what());
        return 1;
    } catch (const std::exception &e) {
        std::fprintf(stderr, "rookery-coordinator: internal error: %s\n", e.what());
        return 1;
    }
}
