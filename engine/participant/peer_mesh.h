// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "engine/net/link.h"
#include "engine/net/net_context.h"
#include "engine/net/tls_credentials.h"
#include "engine/net/wan_emulation.h"
#include "engine/net/wire_message.h"

namespace rookery::participant {

/// A peer to keep a link with: its node id and where it listens ("host:port").
struct PeerAddress
{
    std::string nodeId;
    std::string address;
    bool unreachable = false; ///< the coordinator could not dial it: it dials us
    bool operator==(const PeerAddress &) const = default;
};

/// Whether this node dials `peer` (else the peer dials it): the one that can be dialled
/// is dialled; when both can, the smaller node id dials. Both ends reach the same
/// answer from the same assignment. When neither can be dialled, neither dials.
bool dialsPeer(const std::string &selfId, bool selfUnreachable, const PeerAddress &peer);

/// A node's links to the other nodes of its swarm: a listener for peers that dial in
/// and dialled links to peers it dials. For any two peers one dials (dialsPeer()), so
/// each pair has exactly one link, which carries traffic both ways
/// (forward activations one way, gradients back; ring chunks). Every link is mutual
/// TLS with the swarm's CA as the only trust anchor, and a dialled link checks that the
/// peer is the node it asked for.
///
/// Thread safety: every method may be called from any thread. Events run on the
/// NetContext's thread and must not block; they are never called under the mesh's lock.
class PeerMesh
{
public:
    struct Config
    {
        std::string nodeId;
        std::string bindAddress = "127.0.0.1";
        uint16_t port = 0; ///< 0: ephemeral
        net::TlsCredentials credentials;
        net::LinkConfig link;
        /// Inbound connections from one IP address beyond this are closed at once, before
        /// their TLS handshake (0: no cap). An honest node links to a handful of peers;
        /// many volunteers behind one router, or a local swarm on loopback, stay well
        /// under it.
        size_t maxLinksPerAddress = 32;
        /// A peer this node dials that has not linked for this long is asked for through
        /// the relay too: its address can be right and still not reachable from here (two
        /// volunteers behind one router without hairpin NAT).
        std::chrono::milliseconds relayFallbackAfter{20'000};
        /// No neighbour reachable this long: a warning (Events::problem), again each minute.
        std::chrono::milliseconds isolatedWarningAfter{30'000};
        /// Each link that opens has its upload timed with a burst of padded pings
        /// (net::UploadProbe: about 2 MiB on a fast link, 240 KiB on a slow one), given
        /// up to linkProbeTimeout; linkFigures() has the results.
        bool measureLinks = true;
        std::chrono::milliseconds linkProbeTimeout{20'000};
        /// Testing only (ROOKERY_WAN_EMULATION): every link's incoming messages are
        /// held back as over an internet path. Off by default.
        net::WanEmulationConfig wan;
    };
    struct Events
    {
        std::function<void(const std::string &peer, net::Message &&message)> message;
        std::function<void(const std::string &peer, bool up)> link;
        std::function<void(const std::string &peer)> writable;
        /// Ask the coordinator for a relayed link to `peer` (RelayRequest): neither can
        /// be dialled and this node is the one that asks. The grant comes back through
        /// relayGranted().
        std::function<void(const std::string &peer)> needRelay;
        /// Something a person should hear, as a warning, once per episode: a neighbour
        /// that cannot be reached directly ("cannot reach 3f2a… at 203.0.113.7:41000
        /// directly (timed out); using the relay"), a relay refused, or no neighbour
        /// reachable at all (`peer` empty). The mesh keeps trying.
        std::function<void(const std::string &peer, const std::string &text)> problem;
    };

    /// Starts listening at once; throws rookery::Error when it cannot.
    PeerMesh(net::NetContext &context, Config config, Events events);
    /// Closes the links (waiting up to a second for the goodbyes) and waits for an event
    /// that is running; no event comes after it returns. Do not destroy the mesh while
    /// holding a lock that the event handlers take.
    ~PeerMesh();
    PeerMesh(const PeerMesh &) = delete;
    PeerMesh &operator=(const PeerMesh &) = delete;

    uint16_t port() const;
    const std::string &nodeId() const;

    /// The peers this node needs now. Dials those it must dial (dialsPeer(), with
    /// `selfUnreachable` this node's own verdict), keeps links to peers still listed and
    /// closes the rest. Throws rookery::Error for a malformed address.
    void setPeers(const std::vector<PeerAddress> &peers, bool selfUnreachable = false);
    /// A renewed certificate: new links (accepted, dialled or relayed) present it, links
    /// still trying to connect start again with it, and open links carry on. Throws
    /// rookery::Error when the credentials are unusable.
    void setCredentials(const net::TlsCredentials &credentials);
    /// The coordinator's ban list (quarantined node ids), whole: links to and from them
    /// close now and are refused from then on, even when an assignment still names them.
    void setBanned(std::set<std::string> nodeIds);
    /// A relay grant from the coordinator (to either end): links to the peer through the
    /// relay, with mutual TLS end to end. Ignored for a peer that needs no relay.
    void relayGranted(const net::RelayGrant &grant);
    /// Asks again, at a growing back-off, for relayed links that are gone. Call it often
    /// (every few hundred milliseconds).
    void tick();
    /// Queues `message` on the link to `peer`; NotOpen when there is none right now.
    net::SendResult send(const std::string &peer, const net::Message &message);
    bool isUp(const std::string &peer) const;
    /// Bytes sent and received over all links so far (closed ones included).
    net::LinkStats totals() const;
    /// The upload and round trip measured on the link to each peer of the current
    /// assignment that has a figure (Config::measureLinks), in peer order.
    std::vector<net::LinkFigure> linkFigures() const;

    struct State;

private:
    void setRelays(const std::vector<PeerAddress> &peers, bool selfUnreachable);
    std::shared_ptr<State> m;
};

} // namespace rookery::participant
