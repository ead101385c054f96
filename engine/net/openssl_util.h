// SPDX-License-Identifier: GPL-3.0-or-later
// Internal to engine/net: includes OpenSSL. RAII holders, PEM conversions, SHA-256
// fingerprints and key files, shared by identity, certificate authority and TLS code.
#pragma once

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

#include <openssl/evp.h>
#include <openssl/x509.h>

namespace rookery::net::ossl {

struct Free
{
    void operator()(EVP_PKEY *p) const { EVP_PKEY_free(p); }
    void operator()(X509 *p) const { X509_free(p); }
};
using Key = std::unique_ptr<EVP_PKEY, Free>;
using Cert = std::unique_ptr<X509, Free>;

/// Throws rookery::Error "<context>: <OpenSSL's error queue>".
[[noreturn]] void fail(const std::string &context);

Key generateEd25519();
Key privateKeyFromPem(std::string_view pem, const std::string &what);
Key publicKeyFromPem(std::string_view pem, const std::string &what);
Cert certificateFromPem(std::string_view pem, const std::string &what);
std::string privateKeyPem(EVP_PKEY *key);
std::string publicKeyPem(EVP_PKEY *key);
std::string certificatePem(X509 *cert);

/// Lowercase hex SHA-256 of the key's DER SubjectPublicKeyInfo: a node's id.
std::string keyFingerprint(EVP_PKEY *key);
/// Lowercase hex SHA-256 of the certificate's DER encoding.
std::string certFingerprint(X509 *cert);
/// Whether `pin` (a join string's sha256) names `cert`: the SHA-256 of its key (SPKI,
/// what coordinators print, kept across renewals) or of the whole certificate (older
/// join strings).
bool matchesPin(X509 *cert, const std::string &pin);
/// The subject's common name ("" when none).
std::string commonName(X509 *cert);
/// "2026-05-01 12:00:00 UTC" for a certificate time.
std::string timeText(const ASN1_TIME *t);

/// A signed X.509 v3 certificate for `subjectKey`. `isCa`: basicConstraints CA:TRUE,
/// keyCertSign; otherwise CA:FALSE with both serverAuth and clientAuth (peers dial and
/// accept). Self-signed when `issuer` is null.
Cert makeCertificate(EVP_PKEY *subjectKey, const std::string &commonName, X509 *issuer, EVP_PKEY *issuerKey,
                     std::chrono::system_clock::time_point notBefore, std::chrono::system_clock::time_point notAfter,
                     bool isCa);

std::string readFile(const std::filesystem::path &path);

} // namespace rookery::net::ossl
