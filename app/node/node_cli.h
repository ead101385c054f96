// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <string>

#include "engine/host/whole_model_run.h"

namespace rookery::app {

/// Everything rookery-node can be told on its command line.
struct NodeOptions
{
    host::WholeModelSettings local;
    std::string dataDir;
    std::string datasetDir;
    bool quiet = false;
    bool profile = false;      ///< print the capability profile and exit
    bool json = false;         ///< ... as JSON
    bool remeasure = false;    ///< ... measured now rather than from the cache
    std::string join;          ///< coordinator address: swarm mode
    std::string name;          ///< swarm: this node's name for people
    std::string bind;          ///< "": every interface, IPv4 and IPv6
    std::string publicAddress; ///< "": the address the coordinator sees
    bool noPortMapping = false;
    int port = 0;
    int serveRelay = 0;                   ///< swarm: run a relay for other volunteers on this port; 0: none
    double relayMbit = 0;                 ///< swarm: its rate per pair and direction, Mbit/s; 0: no cap
    std::string peerCompression = "bf16"; ///< swarm: none, fp16 or bf16 on the links it dials
    std::string ringCompression = "int8"; ///< swarm: none, bf16, int8 or int4 for the ring chunks it sends
    bool stay = false;                    ///< swarm: stay in the swarm after the run is complete
    int64_t evalSamples = 0;              ///< swarm: test on the first N samples; 0: all
    int64_t dataCacheMiB = 2048;          ///< swarm: the cap on dataset shards fetched from the coordinator
    int checkpointSeconds = -1;           ///< swarm: checkpoints at least this many seconds apart; -1: the default
    int statusPort = 0;                   ///< swarm: the coordinator's status API port; 0: the coordinator's + 1
    int controlPort = 0;                  ///< the local control API's port on 127.0.0.1; 0: any free port
    bool noControl = false;               ///< serve no local control API
};

/// Parses argv into `options`. Returns false when --help or --version was shown.
/// Throws rookery::Error on bad input.
bool parseNodeOptions(int argc, char **argv, NodeOptions &options);

} // namespace rookery::app
