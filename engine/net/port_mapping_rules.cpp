// SPDX-License-Identifier: GPL-3.0-or-later
// The port mapper's pure rules: error texts, candidate ports, renewal times. No library
// calls here, so the tests need no router; the codes are the UPnP IGD specification's
// and libnatpmp's (natpmp.h), copied so that this file needs neither header.
#include "engine/net/port_mapping_methods.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <utility>

namespace rookery::net::port_mapping {

namespace {

struct Named
{
    int code;
    const char *text;
};

constexpr std::array kUpnpErrors{
    Named{-1, "no usable answer from the router"},
    Named{-2, "invalid arguments"},
    Named{-3, "no HTTP answer from the router"},
    Named{-4, "an answer the router's software got wrong"},
    Named{-5, "out of memory"},
    Named{401, "InvalidAction"},
    Named{402, "InvalidArgs"},
    Named{501, "ActionFailed"},
    Named{600, "ArgumentValueInvalid"},
    Named{601, "ArgumentValueOutOfRange"},
    Named{605, "StringArgumentTooLong"},
    Named{606, "ActionNotAuthorized"},
    Named{714, "NoSuchEntryInArray"},
    Named{715, "WildCardNotPermittedInSrcIP"},
    Named{716, "WildCardNotPermittedInExtPort"},
    Named{718, "ConflictInMappingEntry"},
    Named{724, "SamePortValuesRequired"},
    Named{725, "OnlyPermanentLeasesSupported"},
    Named{726, "RemoteHostOnlySupportsWildcard"},
    Named{727, "ExternalPortOnlySupportsWildcard"},
    Named{728, "NoPortMapsAvailable"},
    Named{729, "ConflictWithOtherMechanisms"},
    Named{732, "WildCardNotPermittedInIntPort"},
};

constexpr std::array kNatPmpErrors{
    Named{-1, "invalid arguments"},
    Named{-2, "could not open a socket"},
    Named{-3, "this computer has no default gateway to ask"},
    Named{-4, "could not close the socket"},
    Named{-5, "could not receive the answer"},
    Named{-6, "no request was pending"},
    Named{-7, "the gateway does not run NAT-PMP"},
    Named{-8, "could not reach the gateway"},
    Named{-9, "an answer came from another address than the gateway"},
    Named{-10, "could not send the request"},
    Named{-11, "could not set up the socket"},
    Named{-12, "the clock could not be read"},
    Named{-14, "the gateway speaks another NAT-PMP version"},
    Named{-15, "the gateway does not know this request"},
    Named{-49, "the gateway failed without saying why"},
    Named{-51, "the gateway does not allow it"},
    Named{-52, "the gateway has no public address yet"},
    Named{-53, "the gateway has no free ports"},
};

template <size_t N> const char *lookUp(const std::array<Named, N> &table, int code)
{
    const auto it = std::find_if(table.begin(), table.end(), [code](const Named &n) { return n.code == code; });
    return it == table.end() ? nullptr : it->text;
}

} // namespace

std::string describeUpnpError(int code)
{
    const char *text = lookUp(kUpnpErrors, code);
    return std::string(text ? text : "error") + " (" + std::to_string(code) + ")";
}

bool isUpnpConflict(int code) { return code == 718 || code == 729; }

std::vector<uint16_t> candidateExternalPorts(uint16_t internalPort, size_t count)
{
    std::vector<uint16_t> ports;
    if (internalPort == 0)
        return ports;
    uint16_t port = internalPort;
    for (size_t step = 0; ports.size() < count && step < count + 1; ++step) {
        if (std::find(ports.begin(), ports.end(), port) == ports.end())
            ports.push_back(port);
        // Below 1024 a router may refuse any port; above 65535 there is none.
        port = port == 65535 ? uint16_t(1024) : uint16_t(port + 1);
    }
    return ports;
}

std::string describeNatPmpError(int code)
{
    const char *text = lookUp(kNatPmpErrors, code);
    return std::string(text ? text : "error") + " (" + std::to_string(code) + ")";
}

std::chrono::seconds renewalDelay(std::chrono::seconds lease)
{
    using namespace std::chrono_literals;
    if (lease <= 0s)
        return 30min;
    return std::max<std::chrono::seconds>(1s, lease / 2);
}

std::string formatDuration(std::chrono::milliseconds d)
{
    const auto ms = d.count();
    if (ms < 1000)
        return std::to_string(ms) + " ms";
    if (ms % 1000 == 0)
        return std::to_string(ms / 1000) + " s";
    char text[32];
    std::snprintf(text, sizeof text, "%.1f s", double(ms) / 1000.0);
    return text;
}

std::string failureSentence(const PortMappingSettings &settings, const Outcome &upnp, const Outcome &natPmp)
{
    const std::string port = std::to_string(settings.internalPort);
    const std::string byHand = "forward TCP port " + port + " to this computer by hand in the router's settings";
    // A router that answered and said no is the news; silence from the other protocol is not.
    for (const Outcome *o : {&upnp, &natPmp}) {
        if (o->kind == Outcome::Kind::Refused)
            return o->detail + ". Check the router's UPnP and NAT-PMP settings, or " + byHand + ".";
    }
    return "no UPnP or NAT-PMP router answered within " + formatDuration(settings.discoveryTimeout) +
           " (UPnP: " + upnp.detail + "; NAT-PMP: " + natPmp.detail + "). Turn on UPnP or NAT-PMP in the router, or " +
           byHand + ".";
}

} // namespace rookery::net::port_mapping
