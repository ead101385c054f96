// SPDX-License-Identifier: GPL-3.0-or-later
// Port mapping over UPnP IGD with miniupnpc (API 17, miniupnpc 2.2.x): SSDP discovery,
// the gateway's control URL, then AddPortMapping / DeletePortMapping over SOAP.
#include "engine/net/port_mapping_methods.h"

#include <cstring>
#include <optional>
#include <string>

#include <miniupnpc/miniupnpc.h>
#include <miniupnpc/upnpcommands.h>

namespace rookery::net::port_mapping {

namespace {

// How many external ports to try when the router says the one asked for is taken.
constexpr size_t kExternalPortTries = 6;
// Routers are one hop away; a TTL of 2 is miniupnpc's own default.
constexpr unsigned char kSsdpTtl = 2;

using DeviceList = std::unique_ptr<UPNPDev, decltype(&freeUPNPDevlist)>;

// "http://10.0.0.1:5000/rootDesc.xml" has host "10.0.0.1".
std::string hostOf(const char *url)
{
    std::string s = url ? url : "";
    const auto start = s.find("://");
    if (start == std::string::npos)
        return {};
    s = s.substr(start + 3);
    return s.substr(0, s.find_first_of(":/"));
}

// Keeps only the devices at `gateway`; the others are freed.
DeviceList onlyAt(DeviceList devices, const std::string &gateway)
{
    UPNPDev *kept = nullptr;
    UPNPDev *dropped = nullptr;
    UPNPDev *next = nullptr;
    for (UPNPDev *d = devices.release(); d; d = next) {
        next = d->pNext;
        UPNPDev *&list = hostOf(d->descURL) == gateway ? kept : dropped;
        d->pNext = list;
        list = d;
    }
    freeUPNPDevlist(dropped);
    return DeviceList(kept, freeUPNPDevlist);
}

class UpnpMethod final : public Method
{
public:
    explicit UpnpMethod(const PortMappingSettings &settings)
        : m_settings(settings)
    { }
    ~UpnpMethod() override
    {
        if (m_haveUrls)
            FreeUPNPUrls(&m_urls);
    }

    const char *name() const override { return "UPnP IGD"; }

    Outcome map(const std::function<bool()> &stopping) override
    {
        if (auto failure = discover())
            return *failure;
        if (stopping())
            return {Outcome::Kind::NoRouter, {}, 0, {}, "stopped"};
        int code = 0;
        const auto ports = candidateExternalPorts(m_settings.internalPort, kExternalPortTries);
        for (const uint16_t port : ports) {
            code = add(port);
            if (code == UPNPCOMMAND_SUCCESS) {
                m_externalPort = port;
                return mapped();
            }
            if (!isUpnpConflict(code) || stopping())
                break;
        }
        Outcome refused{
            Outcome::Kind::Refused, {}, 0, {}, "the router refused the mapping: " + describeUpnpError(code)};
        if (isUpnpConflict(code))
            refused.detail +=
                " for external ports " + std::to_string(ports.front()) + " to " + std::to_string(ports.back());
        return refused;
    }

    Outcome renew(const std::function<bool()> &) override
    {
        const int code = add(m_externalPort);
        if (code != UPNPCOMMAND_SUCCESS) {
            m_externalPort = 0; // presumably gone with the router's memory; nothing to delete
            return {Outcome::Kind::Refused, {}, 0, {}, "renewal refused: " + describeUpnpError(code)};
        }
        readExternalAddress(); // a DSL line may have got a new address since
        return mapped();
    }

    void remove() override
    {
        if (!m_haveUrls || m_externalPort == 0)
            return;
        const std::string external = std::to_string(m_externalPort);
        UPNP_DeletePortMapping(m_urls.controlURL, m_data.first.servicetype, external.c_str(), "TCP", nullptr);
        m_externalPort = 0;
    }

private:
    // Finds the gateway to ask; the failure when there is none.
    std::optional<Outcome> discover()
    {
        static const char *const kTypes[] = {"urn:schemas-upnp-org:device:InternetGatewayDevice:1",
                                             "urn:schemas-upnp-org:device:InternetGatewayDevice:2",
                                             "urn:schemas-upnp-org:service:WANIPConnection:1",
                                             "urn:schemas-upnp-org:service:WANPPPConnection:1", nullptr};
        const int delayMs = int(m_settings.discoveryTimeout.count());
        int error = 0;
        // searchalltypes = 1: send every search, then wait `delayMs` once (with 0 the
        // wait is paid per type, 4 × the timeout when no router answers).
        DeviceList devices(
            upnpDiscoverDevices(kTypes, delayMs, nullptr, nullptr, UPNP_LOCAL_PORT_ANY, 0, kSsdpTtl, &error, 1),
            freeUPNPDevlist);
        if (!m_settings.onlyGateway.empty())
            devices = onlyAt(std::move(devices), m_settings.onlyGateway);
        if (!devices) {
            const std::string why =
                error == UPNPDISCOVER_SOCKET_ERROR ? "the search could not be sent" : "no answer to the search";
            return Outcome{Outcome::Kind::NoRouter, {}, 0, {}, why};
        }
        const int igd = UPNP_GetValidIGD(devices.get(), &m_urls, &m_data, m_lanAddress, sizeof m_lanAddress);
        m_haveUrls = igd != 0;    // "in any non zero return case, the urls [...] are set"
        if (igd != 1 && igd != 2) // 2: "not connected"; it may still map, so try
            return Outcome{
                Outcome::Kind::NoRouter, {}, 0, {}, "UPnP devices answered, but none is an internet gateway"};
        readExternalAddress();
        return std::nullopt;
    }

    void readExternalAddress()
    {
        char address[64] = {};
        const int code = UPNP_GetExternalIPAddress(m_urls.controlURL, m_data.first.servicetype, address);
        // Not fatal: the mapping works without it, and "0.0.0.0" means "not connected".
        if (code == UPNPCOMMAND_SUCCESS && std::strcmp(address, "0.0.0.0") != 0)
            m_externalAddress = address;
    }

    int add(uint16_t externalPort)
    {
        const std::string external = std::to_string(externalPort);
        const std::string internal = std::to_string(m_settings.internalPort);
        auto ask = [&](std::chrono::seconds lease) {
            const std::string duration = std::to_string(lease.count());
            return UPNP_AddPortMapping(m_urls.controlURL, m_data.first.servicetype, external.c_str(), internal.c_str(),
                                       m_lanAddress, m_settings.description.c_str(), "TCP", nullptr, duration.c_str());
        };
        m_lease = m_settings.lease;
        int code = ask(m_lease);
        if (code == 725) { // OnlyPermanentLeasesSupported: older IGDv1 routers
            m_lease = std::chrono::seconds(0);
            code = ask(m_lease);
        }
        return code;
    }

    Outcome mapped() const { return {Outcome::Kind::Mapped, m_externalAddress, m_externalPort, m_lease, {}}; }

    const PortMappingSettings &m_settings;
    UPNPUrls m_urls{};
    IGDdatas m_data{};
    bool m_haveUrls = false;
    char m_lanAddress[64] = {};
    std::string m_externalAddress;
    uint16_t m_externalPort = 0;
    std::chrono::seconds m_lease{0};
};

} // namespace

std::unique_ptr<Method> makeUpnpMethod(const PortMappingSettings &settings)
{
    return std::make_unique<UpnpMethod>(settings);
}

} // namespace rookery::net::port_mapping
