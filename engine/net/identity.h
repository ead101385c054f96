// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <chrono>
#include <filesystem>
#include <string>
#include <string_view>

namespace rookery::net {

/// Fingerprints are 64 lowercase hex digits of a SHA-256.
/// A node's id: the SHA-256 of its public key in DER SubjectPublicKeyInfo form.
/// Throws rookery::Error when `publicKeyPem` is not a public key.
std::string publicKeyFingerprint(std::string_view publicKeyPem);
/// The SHA-256 of a certificate's DER encoding: what a coordinator address pins.
std::string certificateFingerprint(std::string_view certificatePem);
/// The node id a certificate is for: the fingerprint of its public key.
std::string certificateNodeId(std::string_view certificatePem);

/// A node's key pair (Ed25519). Generated once per installation and kept in
/// <data dir>/identity.key, readable by its owner only; the node id derives from it,
/// so it survives restarts and upgrades.
///
/// Thread safety: a plain value; const methods may be called from any thread.
class Identity
{
public:
    /// The file a data directory keeps its key in.
    static std::filesystem::path keyPath(const std::filesystem::path &dataDir);
    /// Loads <dataDir>/identity.key, or creates it (mode 0600) when there is none.
    /// Throws rookery::Error when the file is readable by other users or is not a key.
    static Identity loadOrCreate(const std::filesystem::path &dataDir);
    /// A new key held in memory only (tests, benchmarks).
    static Identity generate();
    static Identity fromPrivateKeyPem(std::string privateKeyPem);

    const std::string &nodeId() const { return m_nodeId; }
    const std::string &privateKeyPem() const { return m_privateKeyPem; }
    const std::string &publicKeyPem() const { return m_publicKeyPem; }

    /// A certificate signed by this key itself: what a node presents to the coordinator
    /// before the coordinator has signed one (registration).
    std::string selfSignedCertificate(std::chrono::hours validity = std::chrono::hours(24 * 365)) const;

private:
    std::string m_nodeId;
    std::string m_privateKeyPem;
    std::string m_publicKeyPem;
};

} // namespace rookery::net
