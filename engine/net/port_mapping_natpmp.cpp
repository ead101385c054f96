// SPDX-License-Identifier: GPL-3.0-or-later
// Port mapping over NAT-PMP (RFC 6886) with libnatpmp: one UDP socket to the default
// gateway; libnatpmp resends on its own schedule (250 ms, doubling), we bound the wait.
#include "engine/net/port_mapping_methods.h"

#include <algorithm>
#include <string>

#include <arpa/inet.h>
#include <natpmp.h>
#include <poll.h>

namespace rookery::net::port_mapping {

namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

// Our own codes next to libnatpmp's negative ones.
constexpr int kTimedOut = -1000;
constexpr int kStopped = -1001;
// How long the destructor's removal waits for the gateway's answer.
constexpr auto kRemoveWait = 1s;

std::string addressText(in_addr address)
{
    char text[INET_ADDRSTRLEN] = {};
    inet_ntop(AF_INET, &address, text, sizeof text);
    return text;
}

class NatPmpMethod final : public Method
{
public:
    explicit NatPmpMethod(const PortMappingSettings &settings)
        : m_settings(settings)
    { }
    ~NatPmpMethod() override
    {
        if (m_open)
            closenatpmp(&m_natpmp);
    }

    const char *name() const override { return "NAT-PMP"; }

    Outcome map(const std::function<bool()> &stopping) override
    {
        in_addr forced{};
        const bool force = !m_settings.onlyGateway.empty();
        if (force && inet_pton(AF_INET, m_settings.onlyGateway.c_str(), &forced) != 1)
            return {Outcome::Kind::Refused, {}, 0, {}, "\"" + m_settings.onlyGateway + "\" is not an IPv4 address"};
        int r = initnatpmp(&m_natpmp, force ? 1 : 0, forced.s_addr);
        if (r < 0)
            return noRouter(r);
        m_open = true;
        r = sendpublicaddressrequest(&m_natpmp);
        natpmpresp_t response{};
        if (r >= 0)
            r = await(&response, Clock::now() + m_settings.discoveryTimeout, stopping);
        if (r < 0)
            return failed(r);
        if (response.type != NATPMP_RESPTYPE_PUBLICADDRESS)
            return {Outcome::Kind::Refused, {}, 0, {}, gatewayText() + " answered with something else"};
        m_externalAddress = addressText(response.pnu.publicaddress.addr);
        if (m_externalAddress == "0.0.0.0")
            m_externalAddress.clear();
        return request(m_settings.internalPort, m_settings.lease, m_settings.discoveryTimeout, stopping);
    }

    Outcome renew(const std::function<bool()> &stopping) override
    {
        return request(m_publicPort, m_settings.lease, m_settings.discoveryTimeout, stopping);
    }

    void remove() override
    {
        if (!m_open || m_publicPort == 0)
            return;
        // RFC 6886 §3.4: a lifetime of 0 deletes the mapping.
        if (sendnewportmappingrequest(&m_natpmp, NATPMP_PROTOCOL_TCP, m_settings.internalPort, m_publicPort, 0) >= 0) {
            natpmpresp_t response{};
            await(&response, Clock::now() + kRemoveWait, [] { return false; });
        }
        m_publicPort = 0;
    }

private:
    Outcome request(uint16_t publicPort, std::chrono::seconds lease, std::chrono::milliseconds timeout,
                    const std::function<bool()> &stopping)
    {
        const auto lifetime = uint32_t(std::clamp<int64_t>(lease.count(), 1, UINT32_MAX));
        int r =
            sendnewportmappingrequest(&m_natpmp, NATPMP_PROTOCOL_TCP, m_settings.internalPort, publicPort, lifetime);
        natpmpresp_t response{};
        if (r >= 0)
            r = await(&response, Clock::now() + timeout, stopping);
        if (r < 0)
            return failed(r);
        if (response.type != NATPMP_RESPTYPE_TCPPORTMAPPING)
            return {Outcome::Kind::Refused, {}, 0, {}, gatewayText() + " answered with something else"};
        // The gateway picks the public port (ours if free) and may shorten the lifetime.
        m_publicPort = response.pnu.newportmapping.mappedpublicport;
        const std::chrono::seconds granted(response.pnu.newportmapping.lifetime);
        return {Outcome::Kind::Mapped, m_externalAddress, m_publicPort, granted, {}};
    }

    // Waits for the answer to the pending request until `deadline`, waking every 100 ms
    // to look at `stopping`. libnatpmp resends when its retry time has come.
    int await(natpmpresp_t *response, Clock::time_point deadline, const std::function<bool()> &stopping)
    {
        for (;;) {
            const int r = readnatpmpresponseorretry(&m_natpmp, response);
            if (r != NATPMP_TRYAGAIN)
                return r;
            const auto now = Clock::now();
            if (now >= deadline)
                return kTimedOut;
            if (stopping())
                return kStopped;
            timeval retry{};
            getnatpmprequesttimeout(&m_natpmp, &retry);
            const auto untilRetry = std::chrono::milliseconds(retry.tv_sec * 1000 + retry.tv_usec / 1000);
            const auto wait = std::min({untilRetry, std::chrono::milliseconds(100),
                                        std::chrono::ceil<std::chrono::milliseconds>(deadline - now)});
            pollfd fd{m_natpmp.s, POLLIN, 0};
            poll(&fd, 1, int(std::max<int64_t>(wait.count(), 0)));
        }
    }

    std::string gatewayText() const { return "the gateway " + addressText(in_addr{m_natpmp.gateway}); }

    Outcome noRouter(int r) const { return {Outcome::Kind::NoRouter, {}, 0, {}, describeNatPmpError(r)}; }

    Outcome failed(int r) const
    {
        switch (r) {
        case kTimedOut:
            return {Outcome::Kind::NoRouter, {}, 0, {}, "no answer from " + gatewayText()};
        case kStopped:
            return {Outcome::Kind::NoRouter, {}, 0, {}, "stopped"};
        case NATPMP_ERR_NOGATEWAYSUPPORT: // the gateway's "port unreachable", or no answer after 9 tries
            return {Outcome::Kind::NoRouter, {}, 0, {}, gatewayText() + " does not run NAT-PMP"};
        case NATPMP_ERR_RECVFROM:
        case NATPMP_ERR_CONNECTERR:
        case NATPMP_ERR_SENDERR:
            return {Outcome::Kind::NoRouter, {}, 0, {}, gatewayText() + ": " + describeNatPmpError(r)};
        default:
            return {
                Outcome::Kind::Refused, {}, 0, {}, gatewayText() + " refused the mapping: " + describeNatPmpError(r)};
        }
    }

    const PortMappingSettings &m_settings;
    natpmp_t m_natpmp{};
    bool m_open = false;
    uint16_t m_publicPort = 0;
    std::string m_externalAddress;
};

} // namespace

std::unique_ptr<Method> makeNatPmpMethod(const PortMappingSettings &settings)
{
    return std::make_unique<NatPmpMethod>(settings);
}

} // namespace rookery::net::port_mapping
