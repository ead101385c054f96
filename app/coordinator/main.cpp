// SPDX-License-Identifier: GPL-3.0-or-later
// rookery-coordinator: where a swarm meets.
#include <csignal>
#include <cstdio>

#include <pthread.h>
#include <sys/resource.h>

#include "app/coordinator/coordinator_cli.h"
#include "app/coordinator/dataset_command.h"
#include "engine/common/error.h"
#include "engine/common/log.h"
#include "engine/common/wall_clock.h"
#include "engine/coord/dataset_library.h"
#include "engine/coord/invite_book.h"
#include "engine/coord/job_file.h"
#include "engine/coord/join_address.h"
#include "engine/net/coordinator_address.h"

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

// `rookery-coordinator invite`: a new join token in the coordinator's database (it may
// be running: the token works at once), printed inside the join string.
int invite(const rookery::app::CoordinatorOptions &o)
{
    using namespace rookery;
    const auto &dir = o.settings.dataDir;
    auto address = net::CoordinatorAddress::parse(coord::readJoinAddress(dir, o.settings.publicHost));
    coord::InviteBook book(dir / "rookery.db");
    const int64_t now = nowMs();
    if (o.inviteList) {
        const auto all = book.list();
        if (all.empty())
            std::printf("no invites yet: 'rookery-coordinator invite --data-dir %s' makes one\n", dir.c_str());
        for (const auto &i : all)
            std::printf("%s  %lld of %lld uses left  %s %s%s%s\n", i.tokenHash.substr(0, 12).c_str(),
                        static_cast<long long>(i.usesLeft), static_cast<long long>(i.maxUses),
                        i.expiresMs > now ? "expires" : "expired", coord::utcMinuteText(i.expiresMs).c_str(),
                        i.note.empty() ? "" : "  ", i.note.c_str());
        return 0;
    }
    const auto made = book.create(o.inviteUses, std::chrono::hours(24 * o.inviteDays), o.inviteNote, now);
    address.invite = made.token;
    std::printf("%s\n", address.toString().c_str());
    std::fprintf(stderr, "an invite for %lld new volunteer%s, valid until %s; it is shown only now\n",
                 static_cast<long long>(made.maxUses), made.maxUses == 1 ? "" : "s",
                 coord::utcMinuteText(made.expiresMs).c_str());
    return 0;
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
    if (!options.datasetCommand.empty())
        return app::runDatasetCommand(options.datasetCommand);
    if (!options.datasetHashDir.empty()) {
        try {
            std::printf("%s\n", coord::datasetContentHash(options.datasetHashDir).c_str());
            return 0;
        } catch (const Error &e) {
            std::fprintf(stderr, "rookery-coordinator dataset-hash: %s\n", e.what());
            return 1;
        }
    }
    if (options.invite) {
        try {
            return invite(options);
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
        for (const auto &note : options.jobNotes)
            std::printf("%s\n", note.c_str());
        // Before the coordinator starts: a dataset that is missing or does not match the
        // job's hash stops it here, with nothing planned.
        std::printf("%s\n", coord::settleServedDataset(options.settings.run, options.jobSha256,
                                                       options.settings.dataDir, options.fashionMnistDir)
                                .c_str());
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
        if (options.settings.admission == coord::Admission::Open)
            std::printf("admission: open to anyone who can reach this coordinator (--open)\n");
        else
            std::printf("admission: by invite; make a join string for new volunteers with: rookery-coordinator "
                        "invite --data-dir %s --uses N\n",
                        options.settings.dataDir.c_str());
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
