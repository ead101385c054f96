// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/coord/registration_check.h"

#include <cmath>

#include "engine/common/error.h"
#include "engine/device/capability_profile.h"

namespace rookery::coord {
namespace {

[[noreturn]] void refuse(net::CoordinatorErrorCode code, std::string reason) { throw Refusal{code, std::move(reason)}; }

[[noreturn]] void badRequest(std::string reason) { refuse(net::CoordinatorErrorCode::BadRequest, std::move(reason)); }

// "host:port", "[v6]:port" -> host (brackets kept) and port text.
bool splitHostPort(const std::string &text, std::string &host, std::string &port)
{
    if (!text.empty() && text.front() == '[') {
        const auto close = text.find(']');
        if (close == std::string::npos || close + 1 >= text.size() || text[close + 1] != ':')
            return false;
        host = text.substr(0, close + 1);
        port = text.substr(close + 2);
        return true;
    }
    const auto colon = text.rfind(':');
    if (colon == std::string::npos || text.find(':') != colon)
        return false;
    host = text.substr(0, colon);
    port = text.substr(colon + 1);
    return true;
}

std::string checkListenAddress(const std::string &text, const std::string &remote)
{
    std::string host, port;
    if (!splitHostPort(text, host, port))
        badRequest("the listen address '" + text + "' is not host:port");
    int value = 0;
    for (char c : port) {
        if (c < '0' || c > '9' || value > 65535)
            badRequest("the listen address '" + text + "' has a bad port '" + port + "'");
        value = value * 10 + (c - '0');
    }
    if (port.empty() || value < 1 || value > 65535)
        badRequest("the listen address '" + text + "' has a bad port '" + port + "' (1-65535)");
    if (host.empty() || host == "0.0.0.0" || host == "[::]") {
        std::string remoteHost, remotePort;
        if (!splitHostPort(remote, remoteHost, remotePort))
            badRequest("the listen address '" + text + "' has no host, and the link's address '" + remote +
                       "' gives none");
        host = remoteHost;
    }
    for (char c : host)
        if (c <= ' ' || c == '/' || c == '#')
            badRequest("the listen address '" + text + "' has a bad host");
    return host + ":" + port;
}

std::string checkName(const std::string &name)
{
    if (name.size() > 128)
        badRequest("the node name is " + std::to_string(name.size()) + " bytes; at most 128 are allowed");
    std::string clean;
    for (char c : name)
        if (static_cast<unsigned char>(c) >= ' ' && c != 0x7f)
            clean += c;
    return clean;
}

} // namespace

swarm::Capacity capacityOf(const std::string &profileJson, double upload)
{
    const device::CapabilityProfile p = device::capabilityProfileFromJson(profileJson);
    swarm::Capacity c{p.gflopsAllThreads, int64_t(p.ramAvailableBytes), upload};
    for (const auto &g : p.gpus)
        if (g.gflops > c.gflops && g.memoryBytes > 0)
            c = {g.gflops, int64_t(g.memoryBytes), upload};
    return c;
}

CheckedRegistration checkRegistration(const net::Register &r, const std::string &remoteAddress, int64_t nowMs)
{
    const int64_t skew = r.timestampMs - nowMs;
    const int64_t window = std::chrono::duration_cast<std::chrono::milliseconds>(kRegistrationClockWindow).count();
    if (skew > window || skew < -window)
        refuse(net::CoordinatorErrorCode::Replay,
               "the registration is stamped " + std::to_string(std::llabs(skew) / 1000) + " s " +
                   (skew < 0 ? "behind" : "ahead of") + " the coordinator's clock (at most " +
                   std::to_string(window / 1000) +
                   " s are allowed): a replayed registration, or a clock that needs setting");
    if (r.nonce.size() != 16)
        badRequest("the registration nonce must be 16 bytes, not " + std::to_string(r.nonce.size()));
    if (!(r.uploadBytesPerSecond >= 0) || !std::isfinite(r.uploadBytesPerSecond))
        badRequest("upload_bytes_per_second must be a positive number or 0 (unknown)");
    CheckedRegistration out;
    out.name = checkName(r.name);
    out.listenAddress = checkListenAddress(r.listenAddress, remoteAddress);
    out.assumedBandwidth = r.uploadBytesPerSecond == 0;
    try {
        out.capacity =
            capacityOf(r.profileJson, out.assumedBandwidth ? kDefaultUploadBytesPerSecond : r.uploadBytesPerSecond);
    } catch (const Error &e) {
        badRequest(std::string("the capability profile is malformed: ") + e.what());
    }
    if (!(out.capacity.gflops > 0) || !std::isfinite(out.capacity.gflops))
        badRequest("the capability profile has no measured compute (gflops_all_threads is " +
                   std::to_string(out.capacity.gflops) + ")");
    if (out.capacity.memoryBytes <= 0)
        badRequest("the capability profile has no available memory (ram_available_bytes is 0)");
    return out;
}

bool ReplayGuard::admit(const std::string &nonce, int64_t nowMs)
{
    std::lock_guard lock(m_mutex);
    return m_seen.emplace(nonce, nowMs).second;
}

void ReplayGuard::prune(int64_t nowMs)
{
    const int64_t horizon =
        nowMs - 2 * std::chrono::duration_cast<std::chrono::milliseconds>(kRegistrationClockWindow).count();
    std::lock_guard lock(m_mutex);
    std::erase_if(m_seen, [&](const auto &e) { return e.second < horizon; });
}

size_t ReplayGuard::size() const
{
    std::lock_guard lock(m_mutex);
    return m_seen.size();
}

} // namespace rookery::coord
