// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <string>

namespace rookery::net {

/// What one end of a link presents and trusts, all PEM text.
struct TlsCredentials
{
    std::string certificatePem;   ///< our certificate (CA-signed, or self-signed before registration)
    std::string privateKeyPem;    ///< its key (Identity::privateKeyPem())
    std::string caCertificatePem; ///< the swarm CA: the only trust anchor (may be empty with a pin)
};

/// How a link checks the certificate the other end presents.
struct PeerCheck
{
    enum class Kind {
        SwarmCa,           ///< signed by our swarm CA, in date, its CN equal to its key's fingerprint
        PinnedCertificate, ///< exactly the certificate whose SHA-256 is `sha256`, in date (the coordinator)
        AnyCertificate,    ///< any certificate in date; the node id still comes from its key (registration)
    };
    Kind kind = Kind::SwarmCa;
    std::string sha256;         ///< PinnedCertificate: lowercase hex
    std::string expectedNodeId; ///< optional: refuse a peer with another node id
};

} // namespace rookery::net
