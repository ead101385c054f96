// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <filesystem>
#include <string>

#include "engine/net/certificate_authority.h"
#include "engine/net/identity.h"

namespace rookery::coord {

/// The coordinator's keys and certificates, kept in its data directory: the swarm CA
/// (ca.key, ca.crt), the coordinator's own key (identity.key) and its certificate,
/// signed by that CA (coordinator.crt). The certificate's SHA-256 is the pin in the
/// coordinator's address, so it is kept across restarts and issued afresh only when it
/// is missing, damaged, not for this key or CA, or within 30 days of expiry. The join
/// string pins the key, so a renewal does not change it.
struct CoordinatorIdentity
{
    net::CertificateAuthority ca;
    net::Identity key;
    std::string certificatePem;
    /// The pin in the join string: the SHA-256 of the key's SubjectPublicKeyInfo (its
    /// node id), which a renewed certificate keeps.
    std::string fingerprint;

    /// Throws rookery::Error when a file cannot be read or written.
    static CoordinatorIdentity loadOrCreate(const std::filesystem::path &dataDir, const std::string &swarmName);
};

} // namespace rookery::coord
